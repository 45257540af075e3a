#!/usr/bin/env python3
"""Files vkllm writes and reads under hostile conditions (issue 41), on the command line:

  make_model_outputs  `make-model -o PATH` where PATH is a FIFO, a character device, a directory, a
                      symbolic link or a dangling one: written to, refused, or the link's file
                      replaced; never renamed over (it used to become a regular file).
  model_changed       `run` and `serve` while their model file is truncated, or rewritten in place,
                      during the load: "model file changed while loading" and exit code 3 (was
                      SIGBUS, no message). Deterministic: stderr is a terminal whose output is
                      stopped (XOFF), so vkllm blocks in its first progress line, after the first
                      tensors and before the rest; the file is changed there and output resumed.

  test_harden.py VKLLM [PART...]   (all parts by default)
"""
import os, pty, select, shutil, signal, stat, subprocess, sys, tempfile, threading, time

VKLLM = sys.argv[1]
REQUIRE = os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1"
models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
MODEL = os.path.join(models, "stories260K.gguf")
ROOT = os.geteuid() == 0

failures = []


def check(c, what):
    if not c:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return c


def run(args, env=None, timeout=60):
    try:
        p = subprocess.run([VKLLM] + args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                           env=env)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


# --- make-model -o ---------------------------------------------------------------------------------

def make_model_outputs(tmp):
    mm = ["make-model", "--seed", "3"]
    ref = os.path.join(tmp, "ref.gguf")
    rc, err = run(mm + ["-o", ref])
    want = open(ref, "rb").read() if rc == 0 else None
    check(rc == 0 and want[:4] == b"GGUF", "make-model to a new file: %s %s" % (rc, err))

    # a FIFO is written to (a reader takes the bytes), and stays a FIFO
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    rc, err = run(mm + ["-o", fifo], timeout=30)
    if reader.is_alive():  # the writer never opened it: let the reader go
        with open(fifo, "wb"):
            pass
    reader.join(10)
    check(rc == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode) and got and got[0] == want,
          "-o FIFO: written through, still a FIFO: rc %s, %s, %d bytes read: %s" %
          (rc, "FIFO" if stat.S_ISFIFO(os.lstat(fifo).st_mode) else "no longer a FIFO", len(got[0]) if got else -1, err))

    # as root, device nodes of our own (never the system's /dev/null: the old code renamed over it):
    # null takes the file, full refuses it, and both stay devices
    if ROOT:
        for name, minor, ok in (("null", 3, True), ("full", 7, False)):
            dev = os.path.join(tmp, name)
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
            rc, err = run(mm + ["-o", dev])
            check((rc == 0) == ok and stat.S_ISCHR(os.lstat(dev).st_mode) and os.lstat(dev).st_rdev == os.makedev(1, minor),
                  "-o a device node (1, %d): %s, and it stays that device: rc %s %s" % (minor, "written" if ok else "ENOSPC", rc, err))
            check(ok or "No space left" in err, "-o /dev/full says why: %s" % err)

    # a directory is refused, and nothing is left beside it
    d = os.path.join(tmp, "dir")
    os.mkdir(d)
    before = sorted(os.listdir(tmp))
    rc, err = run(mm + ["-o", d])
    check(rc == 2 and "is a directory" in err and os.path.isdir(d) and sorted(os.listdir(tmp)) == before,
          "-o a directory: refused (exit 2), nothing left behind: rc %s %s" % (rc, err))

    # a link keeps being a link, to the new file; a dangling link is refused
    target, link = os.path.join(tmp, "target.gguf"), os.path.join(tmp, "link.gguf")
    open(target, "wb").write(b"old")
    os.symlink("target.gguf", link)
    rc, err = run(mm + ["-o", link])
    check(rc == 0 and os.path.islink(link) and open(target, "rb").read() == want,
          "-o a symbolic link: the link stays, its file is replaced: rc %s %s" % (rc, err))
    dangling = os.path.join(tmp, "dangling.gguf")
    os.symlink("nothing-here.gguf", dangling)
    rc, err = run(mm + ["-o", dangling])
    check(rc == 2 and os.path.islink(dangling) and not os.path.exists(os.path.join(tmp, "nothing-here.gguf")),
          "-o a dangling link: refused: rc %s %s" % (rc, err))


# --- the model file changed while it loads -----------------------------------------------------------

def blocked_in_write(pid):
    """True once the process's main thread waits in write(2) on descriptor 2 (the stopped terminal)."""
    try:
        f = open("/proc/%d/syscall" % pid).read().split()
    except OSError:
        return None
    return f[:2] == ["1", "0x2"] or (f[:2] == ["64", "0x2"] and os.uname().machine == "aarch64")


def load_and_change(tmp, cmd, change):
    path = os.path.join(tmp, "model-%s-%s.gguf" % (cmd, change))
    shutil.copyfile(MODEL, path)
    os.utime(path, (946684800, 946684800))  # 2000-01-01: any write now changes the time
    size = os.path.getsize(path)
    master, slave = pty.openpty()
    os.write(master, b"\x13")  # XOFF: the terminal takes no output until XON
    args = {"run": ["run", "-m", path, "-p", "Once", "-n", "2"], "serve": ["serve", "-m", path, "--port", "0"]}[cmd]
    p = subprocess.Popen([VKLLM] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    t0 = time.monotonic()
    blocked = False
    while time.monotonic() - t0 < 30 and p.poll() is None:
        blocked = blocked_in_write(p.pid)
        if blocked is None or blocked:
            break
        time.sleep(0.01)
    if blocked is None:
        p.kill()
        p.wait()
        os.close(master)
        return "no /proc/PID/syscall"
    check(blocked, "%s: blocked in its first progress line" % cmd)
    if change == "truncate":
        os.truncate(path, 64 * 1024)  # the metadata and a few tensors are left
    else:
        with open(path, "r+b") as f:  # the same size, other weights
            f.seek(size // 2)
            f.write(b"\0" * 4096)
    os.write(master, b"\x11")  # XON
    out = b""
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:  # until it exits (a server that loaded would run on)
        if not select.select([master], [], [], 0.5)[0]:
            if p.poll() is not None:
                break
            continue
        try:
            d = os.read(master, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    os.close(master)
    try:
        rc = p.wait(10)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        rc = "still running after 30 s (%s after SIGTERM)" % p.wait(30)
    text = out.decode(errors="replace")
    line = [l for l in text.replace("\r", "\n").split("\n") if "changed" in l]
    check(rc == 3 and line and "model file changed while loading" in line[0] and path in line[0] and
          "VKLLM_STATUS_IO" in line[0],
          "%s, file %s while loading: exit 3 and 'model file changed while loading': rc %s, %r" %
          (cmd, "truncated" if change == "truncate" else "rewritten in place", rc, text[-300:]))
    return None


def model_changed(tmp):
    if not os.path.exists(MODEL):
        if REQUIRE:
            check(False, "missing " + MODEL)
        print("skipped model_changed: missing", MODEL)
        return
    for cmd in ("run", "serve"):
        for change in ("truncate", "rewrite"):
            why = load_and_change(tmp, cmd, change)
            if why:
                print("skipped model_changed:", why)
                return


def main():
    t0 = time.monotonic()
    times = []
    with tempfile.TemporaryDirectory(prefix="vkllm-harden-") as tmp:
        for f in (make_model_outputs, model_changed):
            if sys.argv[2:] and f.__name__ not in sys.argv[2:]:  # test_harden.py VKLLM [PART...]
                continue
            t = time.monotonic()
            d = os.path.join(tmp, f.__name__)
            os.mkdir(d)
            f(d)
            times.append("%s %.1f s" % (f.__name__, time.monotonic() - t))
    print("total %.1f s: %s" % (time.monotonic() - t0, ", ".join(times)))


main()
print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
