"""What the tests that start `vkllm serve` processes share (python3 stdlib): the model or SKIPPED,
checks that collect failures, a server on a free loopback port, requests, and /metrics parsed.
Used by test_serve_render.py, test_haproxy.py and test_prefix_cache.py."""
import http.client, json, os, re, subprocess, sys, threading

REQUIRE = os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1"
failures = []


def skip(why):
    """SKIPPED (exit 77) with the reason; a FAIL under VKLLM_REQUIRE_TEST_MODELS=1 (CI)."""
    if REQUIRE:
        print("FAIL:", why, "(VKLLM_REQUIRE_TEST_MODELS=1)"); sys.exit(1)
    print("SKIPPED:", why); sys.exit(77)


def model(name="stories260K.gguf"):
    models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
    path = os.path.join(models, name)
    if not os.path.exists(path):
        skip("missing " + path)
    return path


def check(c, what):
    if not c:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return c


def finish(ok_line):
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print(ok_line)


def request(port, method, path, body=None, headers=None, timeout=120):
    """(status, response, raw body bytes); body is sent as JSON."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, r, out


class Server:
    """`vkllm serve -m MODEL --port 0 ARGS...`, its stderr kept in .lines, its port in .port."""

    def __init__(self, vkllm, model_path, *args, env=None):
        self.p = subprocess.Popen([vkllm, "serve", "-m", model_path, "--port", "0"] + list(args),
                                  env=dict(os.environ, **(env or {})),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines, ready = [], threading.Event()

        def drain():
            for line in self.p.stderr:
                self.lines.append(line)
                if "listening on" in line:
                    ready.set()
            ready.set()
        threading.Thread(target=drain, daemon=True).start()
        ready.wait(120)
        m = [x for x in (re.search(r"listening on http://[^ ]*:(\d+)", l) for l in self.lines) if x]
        if not m:
            self.p.kill()
            print("".join(self.lines))
            sys.exit("FAIL: the server did not start")
        self.port = int(m[0].group(1))

    def request(self, method, path, body=None, headers=None):
        return request(self.port, method, path, body, headers)

    def metrics(self):
        """/metrics as {series: value}."""
        out = self.request("GET", "/metrics")[2].decode()
        return {k: float(v) for k, v in (l.rsplit(" ", 1) for l in out.splitlines() if l and not l.startswith("#"))}

    def stop(self, what):
        """SIGTERM; the exit code must be 0 (the validation layer silent)."""
        self.p.terminate()
        try:
            rc = self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "timeout"
        check(rc == 0, "%s exits 0 on SIGTERM: %s %s" % (what, rc, "".join(self.lines)[-1500:]))
