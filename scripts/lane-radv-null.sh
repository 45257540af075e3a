#!/bin/sh
# lane-radv-null.sh BUILD_DIR [--table FILE] - AMD's shipping shader compiler (ACO, in Mesa's RADV)
# on chips that are not there: RADV's "null hardware" (RADV_FORCE_FAMILY) lists a device with no
# memory that builds pipelines and reports their statistics (VK_KHR_pipeline_executable_properties).
# `vkllm pipelines` builds them on a compile-only context, which asks the device for no memory
# and no waits.
#
#   Mesa 22.3 (Debian 12's radeon driver): polaris10 (GFX8), vega10 (GFX9), navi10 (GFX10),
#   navi21 (GFX10.3), gfx1100 (GFX11); Mesa 25.0.7 (bookworm-backports, fetched once into
#   $VKLLM_DRIVERS_DIR, default BUILD_DIR/drivers, as the Mesa 25 lane does): navi31 (GFX11, with
#   cooperative matrices) and gfx1201 (GFX12) where it lists.
#
# Per family: `pipelines --all` (every variant) exits 0 with statistics for every pipeline; with
# the device's own tuning (`pipelines`), the hot kernels (matvec, matvec_x8, the tiled and
# cooperative-matrix matmul, attention) spill nothing and use no scratch; on navi31 the
# cooperative-matrix matmul and attention are among them. --table FILE writes the per kernel x
# family table of docs/gpu.md (VGPRs, spills, occupancy) from the same runs.
# Where Mesa 25 cannot be fetched its families are SKIPPED (FAILED with VKLLM_REQUIRE_TEST_MODELS=1).
set -eu
build=$(cd "${1:?usage: lane-radv-null.sh BUILD_DIR [--table FILE]}" && pwd)
table=""
[ "${2:-}" = --table ] && table=${3:?--table FILE}
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/vkllm"
drivers=${VKLLM_DRIVERS_DIR:-$build/drivers}
out="$build/lane-radv-null"
mkdir -p "$out"
icd22=/usr/share/vulkan/icd.d/radeon_icd.x86_64.json
status=0
t0=$(date +%s)

# family ICD LIBDIR: both runs into $out/FAMILY.{all,defaults}.json; 0 when they ran
build_family() {
  f=$1
  for mode in all defaults; do
    flag=""; [ $mode = all ] && flag=--all
    # shellcheck disable=SC2086
    if ! RADV_FORCE_FAMILY=$f VK_ICD_FILENAMES=$2 VK_DRIVER_FILES=$2 LD_LIBRARY_PATH="$3" VKLLM_VALIDATE=$4 \
        timeout 600 "$bin" pipelines $flag --json > "$out/$f.$mode.json" 2> "$out/$f.$mode.err"; then
      echo "lane radv-null: FAILED: $f: vkllm pipelines $flag exited non-zero:" >&2
      tail -3 "$out/$f.$mode.err" >&2
      return 1
    fi
  done
}

families=""
if [ -f "$icd22" ]; then
  for f in polaris10 vega10 navi10 navi21 gfx1100; do
    s=$(date +%s)
    if build_family $f $icd22 "" 1; then families="$families $f"; echo "lane radv-null: $f (Mesa 22.3) built in $(( $(date +%s) - s )) s"
    else status=1; fi
  done
else
  echo "lane radv-null: FAILED: $icd22 is missing (mesa-vulkan-drivers)" >&2
  status=1
fi

m25="$drivers/mesa25"
if "$here/fetch-debs.sh" bookworm-backports "$m25" mesa-vulkan-drivers libdrm2 libdrm-amdgpu1 > "$out/fetch.log" 2>&1; then
  lib="$m25/root/usr/lib/$(uname -m)-linux-gnu"
  python3 - "$m25/root/usr/share/vulkan/icd.d/radeon_icd.json" "$lib/libvulkan_radeon.so" "$out/radeon25.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["ICD"]["library_path"] = sys.argv[2]; json.dump(d, open(sys.argv[3], "w"))
EOF
  for f in navi31 gfx1201; do
    listed=$(RADV_FORCE_FAMILY=$f VK_ICD_FILENAMES="$out/radeon25.json" VK_DRIVER_FILES="$out/radeon25.json" \
      LD_LIBRARY_PATH="$lib" "$bin" devices --json 2>/dev/null |
      python3 -c 'import json,sys; print(len(json.load(sys.stdin)["devices"]))' 2>/dev/null || echo 0)
    if [ "$listed" = 0 ]; then
      if [ $f = navi31 ]; then echo "lane radv-null: FAILED: Mesa 25 lists no navi31" >&2; status=1
      else echo "lane radv-null: $f: Mesa 25.0.7 does not list it (skipped)"; fi
      continue
    fi
    s=$(date +%s)
    if build_family $f "$out/radeon25.json" "$lib" 0; then families="$families $f"; echo "lane radv-null: $f (Mesa 25) built in $(( $(date +%s) - s )) s"
    else status=1; fi
  done
elif [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ]; then
  echo "lane radv-null: FAILED: cannot fetch Mesa 25 from bookworm-backports:" >&2; tail -3 "$out/fetch.log" >&2; status=1
else
  echo "lane radv-null: navi31 SKIPPED: cannot fetch Mesa 25 from bookworm-backports"
fi

# The checks, and the table, from the JSON of every family that ran.
# shellcheck disable=SC2086
python3 - "$out" "$table" $families <<'EOF' || status=1
import json, re, sys
out, table, fams = sys.argv[1], sys.argv[2], sys.argv[3:]
HOT = re.compile(r"^(matvec|matmul|attn)")
bad = []
rows = {}  # kernel -> family -> (vgpr, spills, occupancy) at the device's own tuning (worst of its pipelines)
for f in fams:
    for mode in ("all", "defaults"):
        doc = json.load(open("%s/%s.%s.json" % (out, f, mode)))
        ps = doc["pipelines"]
        if doc["validation_messages"] or doc["device_memory_bytes"]:
            bad.append("%s %s: %d validation messages, %d bytes of device memory" %
                       (f, mode, doc["validation_messages"], doc["device_memory_bytes"]))
        nost = [p["shader"] for p in ps if p["registers"] is None or p["spills"] is None]
        if nost:
            bad.append("%s %s: no statistics for %s" % (f, mode, nost[:5]))
        if mode == "all":
            print("lane radv-null: %s: %d pipelines (--all), %d with spills or scratch, %.0f ms compiling" %
                  (f, len(ps), sum(1 for p in ps if (p["spills"] or 0) + (p["scratch"] or 0) > 0), doc["compile_ms"]))
            continue
        for p in ps:
            if HOT.match(p["shader"]) and ((p["spills"] or 0) > 0 or (p["scratch"] or 0) > 0):
                bad.append("%s: %s spec %s spills %s, scratch %s bytes" %
                           (f, p["shader"], p["spec"], p["spills"], p["scratch"]))
            k = re.sub(r"_(f32|f16|bf16|q\d_[01k]|q\d_k|iq4_nl|iq4_xs|mxfp4|u32)$", "", p["shader"])
            cur = rows.setdefault(k, {}).get(f)
            v = (p["vgpr"] if p["vgpr"] is not None else p["registers"], p["spills"], p["occupancy"])
            if cur is None or v[0] > cur[0]:
                rows[k][f] = v
        if f == "navi31":
            cm = sorted({p["shader"] for p in ps if p["shader"].startswith(("matmul_cm_", "attn_cm_"))})
            if not any(s.startswith("matmul_cm_") for s in cm) or not any(s.startswith("attn_cm_") for s in cm):
                bad.append("navi31: the cooperative-matrix matmul and attention are not among its pipelines (%s)" % cm)
            else:
                print("lane radv-null: navi31: %d cooperative-matrix pipelines compiled (%s, ...)" % (len(cm), ", ".join(cm[:3])))
for b in bad:
    print("lane radv-null: FAILED: " + b, file=sys.stderr)
if table:
    with open(table, "w") as t:
        t.write("| kernel | " + " | ".join(fams) + " |\n|---|" + "---|" * len(fams) + "\n")
        for k in sorted(rows):
            cells = []
            for f in fams:
                v = rows[k].get(f)
                cells.append("-" if v is None else "%s / %s / %s" % v)
            t.write("| %s | %s |\n" % (k, " | ".join(cells)))
    print("lane radv-null: table written to " + table)
sys.exit(1 if bad else 0)
EOF
[ $status = 0 ] && echo "lane radv-null: passed:$families in $(( $(date +%s) - t0 )) s" ||
  echo "lane radv-null: FAILED" >&2
exit $status
