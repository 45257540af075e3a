#!/usr/bin/env python3
"""The Python module (bindings/python/vkllm.py) over the shared library, on stories260K.

- Its ctypes structures have the C compiler's sizes and field offsets (a C program built here
  prints them): a field out of place would read garbage, not fail.
- `python3 -c "import vkllm ..."` run from bindings/python (VKLLM_LIBRARY naming the built
  libvkllm.so) lists the devices `vkllm devices --json` lists, opens the first by a piece of its
  name, tokenizes as `vkllm tokenize` does and streams greedy text equal, byte for byte, to
  `vkllm run --temp 0`'s (200 tokens from BOS, and 48 after a prompt), in many pieces.
- devices=[...] and tensor_split=[...] split the layers over the first device opened twice (as
  `--devices 0,0 --tensor-split 1,4`): contiguous layers, the same greedy text, a time per device.
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
first_index = usable[0].get("index", 0) if usable else 0
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
# a layer split over the device opened twice (as `--devices 0,0 --tensor-split 1,4`)
with vkllm.Model(%r, devices=[%d, %r], tensor_split=[1, 4]) as m:
    out["split"] = m.split
    out["split_text"] = "".join(m.generate(%r, max_tokens=48))
    out["split_ms"] = m.device_ms()
with vkllm.Model(%r, devices=[%d, %d]) as m:
    out["split_free"] = m.split
out["split_errors"] = []
for kw in ({"tensor_split": [1, 1]}, {"devices": [0, 0], "tensor_split": [1]}, {"device": 0, "devices": [0, 0]},
           {"devices": [0, 0], "tensor_split": [0, 0]}):
    try:
        vkllm.Model(%r, **kw)
        out["split_errors"].append("no error")
    except ValueError as e:
        out["split_errors"].append(str(e))
print(json.dumps(out))
""" % (model, piece_of_name, PROMPT, PROMPT, piece_of_name, model, model, first_index, piece_of_name, PROMPT,
       model, first_index, first_index, model)
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
    split, n_layer = out["split"], 5  # stories260K
    check(len(split) == 2 and split[0][0] == name and split[1][0] == name and split[0][1] == 0 and
          split[0][2] == split[1][1] and split[1][2] == n_layer and split[0][2] < split[1][2] - split[1][1],
          "devices=[%d, name], tensor_split=[1, 4]: layers 0 .. %d over the device twice, the second the larger share: %s"
          % (first_index, n_layer, split))
    check(out["split_text"] == out["text_p"], "the split model's greedy text equals one device's: %r" % out["split_text"])
    check(len(out["split_ms"]) == 2 and all(x > 0 for x in out["split_ms"]), "device_ms(): each device's time %s" % out["split_ms"])
    check(len(out["split_free"]) == 2 and out["split_free"][0][1] == 0 and out["split_free"][-1][2] == n_layer,
          "devices without tensor_split: split by free memory %s" % out["split_free"])
    check(len(out["split_errors"]) == 4 and all(e != "no error" for e in out["split_errors"]) and
          "tensor_split" in out["split_errors"][0] and "not both" in out["split_errors"][2],
          "devices/tensor_split misuse raises ValueError: %s" % out["split_errors"])
    check(isinstance(out["nodev"], list) and out["nodev"][0] == "VKLLM_STATUS_NOT_FOUND" and name in out["nodev"][1],
          "an unknown device name: Error listing the devices %s" % out["nodev"])

# --- the library not found where VKLLM_LIBRARY says
r = py("import vkllm", lib="/nonexistent/libvkllm.so")
check(r.returncode != 0 and b"ImportError" in r.stderr and b"VKLLM_LIBRARY" in r.stderr,
      "a bad VKLLM_LIBRARY: ImportError naming it: %s" % r.stderr.decode()[-500:])

if failures:
    print("%d failure(s)" % len(failures)); sys.exit(1)
print("python ok")
