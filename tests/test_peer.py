#!/usr/bin/env python3
"""vkllm against llama.cpp (the independent oracle: it reads the same GGUF on its own), on a
random file of every architecture `vkllm make-model` writes: the last position's logits of a
prompt (the device's prefill, its decode steps, and the scalar reference) against llama.cpp's CPU backend
(../shared/peer: llama_peer_cpu --logits). F32 weights agree to 1e-3 of the largest logit
(llama.cpp keeps its KV cache in f16, the reference in f32); Q8_0 to 2% (llama.cpp's CPU quantizes
the activations of Q8_0 products to 8 bits); IQ4_XS and Q3_K 3%, Q2_K 5%, and those three against
llama.cpp's Vulkan backend (exact dequantization) within 1e-3. The argmax agrees. llama.cpp's k-quant
mixes as make-model writes them (--type q4_K_m: q4_K with q6_K output, attn_v and ffn_down; q3_K_m:
q3_K, q4_K and q5_K; --full only): 3% of llama.cpp's CPU, 1e-3 of its Vulkan backend, and llama.cpp
names the file's type ("Q4_K - Medium"); gemma2's capped logits: 7% of its CPU. Seen on llama (256
wide, 2 layers): 1.5e-2 and 3.8e-4 (q4_K_m), 1.6e-2 and 3.9e-4 (q3_K_m). Architectures:
llama, qwen2, qwen3, granite, phi3 (its LongRoPE's long factors, and its short ones), gemma2 and
gemma3 (windows of 4 on every other layer, which the 8-token prompt crosses; gemma2's caps 3 and 5),
qwen3moe (8 experts, 2 per token), llama with experts (Mixtral's layout: 4, 2 per token) and gpt-oss
(sinks, YaRN, windows of 4 on every other layer, 8 experts with biases, 4 per token).
SKIPPED, never passed, without the peer (../shared/peer/setup.sh installs it; PEER_DIR)."""
import json, os, struct, subprocess, sys, tempfile

VKLLM = sys.argv[1]
PEER = os.path.join(os.environ.get("PEER_DIR", "/tmp/vkllm-peer"), "llama_peer_cpu")
# llama.cpp's Vulkan backend dequantizes exactly (its CPU backend quantizes the activations of
# quantized products to 8 bits): the tight check for the 2- and 3-bit K-quants, whose CPU error
# is largest, and IQ4_XS. (On lavapipe its IQ4_NL disagrees with its own CPU backend, so not that one.)
PEER_VK = os.path.join(os.environ.get("PEER_DIR", "/tmp/vkllm-peer"), "llama_peer_vulkan")
VK_TYPES = {"q2_K": 1e-3, "q3_K": 1e-3, "iq4_xs": 1e-3, "mxfp4": 1e-3, "q4_K_m": 1e-3, "q3_K_m": 1e-3}
# the mixes' general.file_type as llama.cpp prints it (print_info: file type = ...)
MIX_FTYPE = {"q4_K_m": "Q4_K - Medium", "q3_K_m": "Q3_K - Medium"}
if not os.access(PEER, os.X_OK):
    print("SKIPPED: no llama.cpp peer at %s (../shared/peer/setup.sh)" % PEER)
    sys.exit(77)
failures = []
IDS = "1,17,300,42,99,5,260,7"


def logits_vkllm(model, device, n_ctx, decode=False):
    # the context llama.cpp ran with: phi3's LongRoPE picks its factors by it
    r = subprocess.run([VKLLM, "logits", "-m", model, "--ids", IDS, "--top", "100000", "--json", "--device", device,
                        "-c", str(n_ctx)] + (["--decode"] if decode else []),
                       capture_output=True, text=True, timeout=300)
    last = json.loads(r.stdout)[-1]["top"]
    v = [0.0] * len(last)
    for i, x in last:
        v[i] = x
    return v


TYPES = (("f32", 1e-3), ("q8_0", 2e-2), ("iq4_nl", 2e-2), ("iq4_xs", 3e-2), ("q2_K", 5e-2), ("q3_K", 3e-2),
         ("mxfp4", 3e-2), ("q4_K_m", 3e-2), ("q3_K_m", 3e-2))
# Every type on llama; the other architectures in f32 and q8_0 (their kernels are the same ones,
# which selftest checks per type): the suite's time. --full: every architecture in every type.
# --quick (the sanitizer build): f32 only. PEER_TYPES=a,b: those types everywhere.
subset = os.environ.get("PEER_TYPES") or ("f32" if "--quick" in sys.argv[2:] else "")
FULL = "--full" in sys.argv[2:] or bool(os.environ.get("PEER_TYPES"))
if subset:
    TYPES = tuple(t for t in TYPES if t[0] in subset.split(","))

with tempfile.TemporaryDirectory() as d:
    # phi3 (LongRoPE trained at ctx/2) twice: its long factors (ctx 256 in the file, llama.cpp runs
    # 256 positions) and its short ones (ctx 512)
    for arch in ("llama", "qwen2", "qwen3", "granite", "phi3", "phi3-short", "phi3-partial", "gemma2", "gemma3",
                 "qwen3moe", "mixtral", "gpt-oss"):
        for typ, tol in TYPES:
            if arch != "llama" and not FULL and typ not in ("f32", "q8_0"):
                continue
            if typ == "q3_K_m" and not FULL:  # the suite's time: q4_K_m's is the mix the GPU check runs
                continue
            m = os.path.join(d, "%s-%s.gguf" % (arch, typ))
            # 256-element super-blocks need rows of 256: a wider model for them
            wide = ["--n-embd", "256", "--n-ff", "512"] if typ in ("iq4_xs", "q2_K", "q3_K") or "_K_" in typ else []
            extra = ["--ctx", "512"] if arch == "phi3-short" else []
            if arch == "phi3-partial":  # Phi-4-mini's layout: 3/4 of each head rotated, LongRoPE's attn_factor
                extra = ["--rope-dims", "12"]
            if arch in ("qwen3moe", "mixtral"):  # mixtures of experts: 8 (4) experts, 2 per token
                extra = ["--n-expert", "8" if arch == "qwen3moe" else "4", "--n-expert-used", "2"]
            if arch == "gpt-oss":  # 8 experts, 4 per token, head dim 32 (make-model: YaRN, windows of 4)
                extra = ["--n-expert", "8", "--n-expert-used", "4", "--head-dim", "32"]
            name = {"mixtral": "llama", "phi3-short": "phi3", "phi3-partial": "phi3"}.get(arch, arch)
            subprocess.run([VKLLM, "make-model", "--arch", name, "--type", typ, "-o", m] + wide + extra,
                           check=True, capture_output=True)
            out = os.path.join(d, "peer.bin")
            # -v: llama.cpp's loader log, which names the file type
            r = subprocess.run([PEER, m, "--prompt-ids", IDS, "--logits", out, "-p", "0", "-n", "1", "-r", "1", "-t", "2"] +
                               (["-v"] if typ in MIX_FTYPE else []), capture_output=True, text=True, timeout=300)
            if r.returncode or not os.path.exists(out):
                failures.append("%s %s: llama.cpp did not load the file: %s" % (arch, typ, r.stderr[-500:]))
                print("FAIL:", failures[-1])
                continue
            if typ in MIX_FTYPE:
                ft = [l.split("=", 1)[1].strip() for l in r.stderr.splitlines() if "file type" in l and "=" in l]
                ok = ft == [MIX_FTYPE[typ]]
                print("%s: %-10s %-6s llama.cpp's file type %s" % ("ok" if ok else "FAIL", arch, typ, ft))
                if not ok:
                    failures.append("%s %s: llama.cpp's file type %s, not %s" % (arch, typ, ft, MIX_FTYPE[typ]))
            n_ctx = json.loads(r.stdout)["n_ctx"]
            # gemma2's logits are capped at 5 (make-model's cap): llama.cpp's 8-bit activations move them
            # by up to 4.9% of that on quantized weights, so there its Vulkan backend (exact
            # activations) is the tight check for every quantized type but IQ4_NL (see VK_TYPES)
            vk_tol = VK_TYPES.get(typ)
            if arch == "gemma2" and typ != "f32":
                # (the k-quant mixes: 5.8% and 6.0% seen for q4_K_m and q3_K_m, with the device, its
                # decode and the reference identical, and 3.4e-4 of llama.cpp's Vulkan backend)
                tol = max(tol, 7e-2 if "_K_" in typ else 5e-2)
                vk_tol = vk_tol or (1e-3 if typ != "iq4_nl" else None)
            # mixtures of experts: llama.cpp's CPU routes on 8-bit activations, which can pick another
            # expert where two are close (seen: qwen3moe iq4_nl, 1.2 of 3); its Vulkan backend is then
            # the check, and the CPU comparison is only reported
            cpu_binding = True
            if arch in ("qwen3moe", "mixtral", "gpt-oss") and typ != "f32" and os.access(PEER_VK, os.X_OK):
                vk_tol, cpu_binding = 1e-3, False
            raw = open(out, "rb").read()
            peer = struct.unpack("<%df" % (len(raw) // 4), raw)
            scale = max(abs(x) for x in peer)
            # the device's prefill and its decode steps (the ids one at a time), the reference
            for dev in ("0", "0 decode", "ref"):
                v = logits_vkllm(m, dev.split()[0], n_ctx, dev.endswith("decode"))
                diff = max(abs(a - b) for a, b in zip(v, peer))
                am, bm = max(range(len(v)), key=v.__getitem__), max(range(len(peer)), key=peer.__getitem__)
                ok = len(v) == len(peer) and diff <= tol * scale and am == bm
                print("%s: %-10s %-6s device %-8s max|vkllm - llama.cpp| %.3g of %.3g, argmax %d/%d" %
                      ("ok" if ok else "FAIL" if cpu_binding else "note", arch, typ, dev, diff, scale, am, bm))
                if not ok and cpu_binding:
                    failures.append("%s %s device %s" % (arch, typ, dev))
            if vk_tol and os.access(PEER_VK, os.X_OK):
                r = subprocess.run([PEER_VK, m, "--prompt-ids", IDS, "--logits", out, "-p", "0", "-n", "1", "-r", "1"],
                                   capture_output=True, text=True, timeout=300)
                raw = open(out, "rb").read() if r.returncode == 0 else b""
                pv = struct.unpack("<%df" % (len(raw) // 4), raw)
                v = logits_vkllm(m, "0", n_ctx)
                diff = max(abs(a - b) for a, b in zip(v, pv)) if pv else float("inf")
                ok = len(v) == len(pv) and diff <= vk_tol * scale
                print("%s: %-10s %-6s device 0   max|vkllm - llama.cpp Vulkan| %.3g of %.3g" %
                      ("ok" if ok else "FAIL", arch, typ, diff, scale))
                if not ok:
                    failures.append("%s %s against llama.cpp's Vulkan backend" % (arch, typ))
print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
