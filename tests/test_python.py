#!/usr/bin/env python3
"""The Python module (bindings/python/vkllm.py) over the shared library, on stories260K.

- Its ctypes structures have the C compiler's sizes and field offsets (a C program built here
  prints them): a field out of place would read garbage, not fail.
- `python3 -c "import vkllm ..."` run from bindings/python (VKLLM_LIBRARY naming the built
  libvkllm.so) lists the devices `vkllm devices --json` lists, opens the first by a piece of its
  name, tokenizes as `vkllm tokenize` does and streams greedy text equal, byte for byte, to
  `vkllm run --temp 0`'s (200 tokens from BOS, and 48 after a prompt), in many pieces.
- Errors raise vkllm.Error with the library's message; a generator closed early frees its
  generation; a second one while the first runs is refused; a bad VKLLM_LIBRARY is an ImportError.

usage: test_python.py VKLLM_BIN LIBVKLLM SOURCE_DIR
"""
import json, os, shutil, subprocess, sys, tempfile

VKLLM, LIB, SRC = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
BINDINGS = os.path.join(SRC, "bindings", "python")
models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
model = os.path.abspath(os.path.join(models, "stories260K.gguf"))
if not os.path.exists(model):
    if os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1":
        print("FAIL: missing test models in", models); sys.exit(1)
    print("SKIPPED: missing", model); sys.exit(77)

failures = []
def check(c, what):
    if not c:
        failures.append(what); print("FAIL:", what)

def py(code, lib=LIB):
    env = dict(os.environ, VKLLM_LIBRARY=lib, PYTHONDONTWRITEBYTECODE="1")  # nothing written into the tree
    return subprocess.run([sys.executable, "-c", code], cwd=BINDINGS, env=env, capture_output=True, timeout=300)

# --- the structures' layout, from a C compiler
STRUCTS = {
    "vkllm_device_info": ["name", "heap_size", "heap_budget", "memory_types", "unified_memory", "coopmat_shapes",
                          "max_storage_buffer_range", "timestamp_period_ns", "usable", "profile"],
    "vkllm_ctx_params": ["tuning", "compile_only"],
    "vkllm_model_params": ["progress_user_data"],
    "vkllm_session_params": ["type_v", "pool"],
    "vkllm_generate_params": ["n_predict", "stop", "n_stop", "prefill_chunk", "grammar_len", "share", "cancel",
                              "sampling", "on_piece", "piece_user_data"],
    "vkllm_sampling_params": ["seed", "has_seed", "order", "n_bias"],
    "vkllm_generate_stats": ["ttft_ms", "total_ms", "seed", "stop_reason", "kv_bytes_cached"],
}
cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("cc")
check(cc is not None, "a C compiler to check the structures' layout")
if cc:
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "layout.c")
        lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <vkllm.h>", "int main(void) {"]
        for s, fields in STRUCTS.items():
            lines.append('printf("%s sizeof %%zu\\n", sizeof(struct %s));' % (s, s))
            for f in fields:
                lines.append('printf("%s %s %%zu\\n", offsetof(struct %s, %s));' % (s, f, s, f))
        lines.append("return 0; }")
        open(src, "w").write("\n".join(lines) + "\n")
        exe = os.path.join(tmp, "layout")
        r = subprocess.run([cc, "-std=c11", "-I", os.path.join(SRC, "include"), "-o", exe, src], capture_output=True,
                           text=True)
        check(r.returncode == 0, "layout program builds: " + r.stderr)
        c_layout = subprocess.run([exe], capture_output=True, text=True).stdout if r.returncode == 0 else ""
    code = """
import ctypes, vkllm
m = {"vkllm_device_info": vkllm._DeviceInfo, "vkllm_ctx_params": vkllm._CtxParams,
     "vkllm_model_params": vkllm._ModelParams, "vkllm_session_params": vkllm._SessionParams,
     "vkllm_generate_params": vkllm._GenerateParams, "vkllm_sampling_params": vkllm._SamplingParams,
     "vkllm_generate_stats": vkllm._GenerateStats}
for s, fields in %r.items():
    print(s, "sizeof", ctypes.sizeof(m[s]))
    for f in fields:
        print(s, f, getattr(m[s], f).offset)
""" % (STRUCTS,)
    r = py(code)
    check(r.returncode == 0, "the module imports and reports its layout: %s" % r.stderr.decode()[-2000:])
    got = r.stdout.decode()
    for a, b in zip(c_layout.splitlines(), got.splitlines()):
        check(a == b, "layout: C says %r, ctypes %r" % (a, b))
    check(len(c_layout.splitlines()) == len(got.splitlines()) > 20, "every layout line compared")

# --- what the CLI says
devs = json.loads(subprocess.run([VKLLM, "devices", "--json"], capture_output=True, text=True, timeout=120).stdout)["devices"]
usable = [d for d in devs if d.get("usable", True)]
check(len(usable) > 0, "vkllm devices lists a usable device")
expected = subprocess.run([VKLLM, "run", "-m", model, "--temp", "0", "-n", "200", "-p", ""], capture_output=True,
                          timeout=300).stdout
PROMPT = "Once upon a time, there was a dog"
expected_p = subprocess.run([VKLLM, "run", "-m", model, "--temp", "0", "-n", "48", "-p", PROMPT], capture_output=True,
                            timeout=300).stdout
ids = [int(x) for x in subprocess.run([VKLLM, "tokenize", "-m", model, "--ids", PROMPT], capture_output=True, text=True,
                                      timeout=120).stdout.split()]
check(len(expected) > 400 and len(expected_p) > 100 and len(ids) > 3, "the CLI's text and ids: %r %r" % (expected[:80], ids))

# --- the module, from bindings/python
name = usable[0]["name"] if usable else "?"
piece_of_name = name.split()[0].swapcase() if name.split() else name  # a part of it, in the other case
code = """
import json, vkllm
out = {"devices": [[d.index, d.name, d.type, d.usable] for d in vkllm.devices()], "version": vkllm.version()}
with vkllm.Model(%r, device=%r) as m:
    out["device"] = m.device
    out["ids"] = m.tokenize(%r)
    out["detok"] = m.detokenize(out["ids"])
    pieces = list(m.generate("", max_tokens=200, as_bytes=True))
    out["n_pieces"], out["text"] = len(pieces), b"".join(pieces).decode("latin-1")
    out["stats"] = m.last_stats
    out["text_p"] = "".join(m.generate(%r, max_tokens=48))
    g = m.generate("Once", max_tokens=100)
    out["first"] = next(g)
    try:
        next(m.generate("Twice", max_tokens=4))
        out["second"] = "accepted"
    except vkllm.Error as e:
        out["second"] = [e.status, str(e)]
    g.close()  # frees the first: the session is free again
    out["after_close"] = "".join(m.generate("Once", max_tokens=8))
try:
    vkllm.Model("/nonexistent/model.gguf", device=%r)
    out["missing"] = "no error"
except vkllm.Error as e:
    out["missing"] = [e.status, str(e)]
try:
    vkllm.Model(%r, device="no such device anywhere")
    out["nodev"] = "no error"
except vkllm.Error as e:
    out["nodev"] = [e.status, str(e)]
print(json.dumps(out))
""" % (model, piece_of_name, PROMPT, PROMPT, piece_of_name, model)
r = py(code)
check(r.returncode == 0, "the module runs: %s" % r.stderr.decode()[-3000:])
out = json.loads(r.stdout.decode().splitlines()[-1]) if r.returncode == 0 else {}
if out:
    check([d[1] for d in out["devices"]] == [d["name"] for d in devs], "devices(): the CLI's names %s" % out["devices"])
    check([d[2] for d in out["devices"]] == [d["type"] for d in devs], "devices(): the CLI's types")
    check(out["device"] == name, "device=%r opened %r (%r)" % (piece_of_name, name, out["device"]))
    check(out["ids"] == ids, "tokenize equals vkllm tokenize: %s vs %s" % (out["ids"], ids))
    check(out["detok"].strip() == PROMPT, "detokenize gives the prompt back: %r" % out["detok"])
    got = out["text"].encode("latin-1") + b"\n"  # `vkllm run` ends with a newline
    check(got == expected, "greedy 200 tokens from BOS equal vkllm run's byte for byte:\n%r\n%r" % (got, expected))
    check(out["n_pieces"] >= 50, "streamed as it came: %d pieces" % out["n_pieces"])
    st = out["stats"] or {}
    check(st.get("n_generated") == 200 and st.get("stop_reason") == "max_tokens" and st.get("decode_tps", 0) > 0,
          "last_stats: %s" % st)
    got_p = (out["text_p"] + "\n").encode()
    check(got_p == expected_p, "greedy after a prompt equals vkllm run's:\n%r\n%r" % (got_p, expected_p))
    check(len(out["first"]) > 0, "the first piece arrives at the first next(): %r" % out["first"])
    check(isinstance(out["second"], list) and out["second"][0] == "VKLLM_STATUS_INVALID_ARGUMENT" and
          "another generation" in out["second"][1], "a second generation while one runs: refused, %s" % out["second"])
    check(len(out["after_close"]) > 0, "after close() the session generates again: %r" % out["after_close"])
    check(isinstance(out["missing"], list) and out["missing"][0] in ("VKLLM_STATUS_NOT_FOUND", "VKLLM_STATUS_IO") and
          "/nonexistent/model.gguf" in out["missing"][1], "a missing file: Error with the library's message %s" % out["missing"])
    check(isinstance(out["nodev"], list) and out["nodev"][0] == "VKLLM_STATUS_NOT_FOUND" and name in out["nodev"][1],
          "an unknown device name: Error listing the devices %s" % out["nodev"])

# --- the library not found where VKLLM_LIBRARY says
r = py("import vkllm", lib="/nonexistent/libvkllm.so")
check(r.returncode != 0 and b"ImportError" in r.stderr and b"VKLLM_LIBRARY" in r.stderr,
      "a bad VKLLM_LIBRARY: ImportError naming it: %s" % r.stderr.decode()[-500:])

if failures:
    print("%d failure(s)" % len(failures)); sys.exit(1)
print("python ok")
