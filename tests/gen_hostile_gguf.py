#!/usr/bin/env python3
"""Generate tests/data/gguf-hostile/*.gguf: small malformed GGUF files for the reader.

Python 3 standard library only. Run from anywhere:  python3 tests/gen_hostile_gguf.py
The file name says what test_gguf_hostile.c expects of each file:
  ok-*.gguf      must load (edge cases that are valid)
  unsup-*.gguf   VKLLM_STATUS_UNSUPPORTED (GGUF versions other than 2 and 3)
  anything else  VKLLM_STATUS_BAD_FORMAT
Every file name is listed in MANIFEST with a one-line reason. Files found by the fuzzer are kept
as fuzz-*.gguf (written by hand, not by this script, and never deleted by it).
"""
import os
import struct
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "gguf-hostile")

# Value types (GGUF spec) and a few ggml tensor types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
T_F32, T_F16, T_Q4_0 = 0, 1, 2
M64 = (1 << 64) - 1


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & M64)


def gstr(s, length=None):
    b = s.encode() if isinstance(s, str) else s
    return u64(len(b) if length is None else length) + b


def kv(key, vtype, val):
    return gstr(key) + u32(vtype) + val


def arr(et, n, body):
    return u32(et) + u64(n) + body


def tinfo(name, ne, ttype, offset, n_dims=None):
    nd = len(ne) if n_dims is None else n_dims
    return gstr(name) + u32(nd) + b"".join(u64(d) for d in ne) + u32(ttype) + u64(offset)


def pad(n, a=32):
    return b"\0" * ((a - n % a) % a)


def gguf(kvs, tinfos, data=b"", version=3, n_kv=None, n_tensors=None, magic=b"GGUF",
         align=32, padded=True):
    head = magic + u32(version) + u64(len(tinfos) if n_tensors is None else n_tensors) + \
        u64(len(kvs) if n_kv is None else n_kv)
    meta = head + b"".join(kvs) + b"".join(tinfos)
    if padded:
        meta += pad(len(meta), align)
    return meta + data


# --- the valid base file: metadata of every kind, two tensors -----------------------------

def nested(depth, leaf=arr(I32, 1, u32(5))):
    """An ARRAY value body nested depth levels (depth 1 = the leaf array itself)."""
    body = leaf
    for _ in range(depth - 1):
        body = arr(ARRAY, 1, body)
    return body


BASE_KVS = [
    kv("general.architecture", STRING, gstr("llama")),
    kv("llama.context_length", U32, u32(128)),
    kv("tokenizer.ggml.tokens", ARRAY, arr(STRING, 3, gstr("<unk>") + gstr("a") + gstr("bc"))),
    kv("tokenizer.ggml.scores", ARRAY, arr(F32, 3, struct.pack("<3f", 0.0, -1.0, -2.0))),
    kv("x.nested", ARRAY, nested(2)),
    kv("x.bool", BOOL, b"\x01"),
    kv("x.f64", F64, struct.pack("<d", 0.5)),
]
TENSOR_A = dict(name="a", ne=[4, 2], ttype=T_F32, offset=0)   # 32 bytes
TENSOR_B = dict(name="b", ne=[8], ttype=T_F16, offset=32)     # 16 bytes (+16 padding)
BASE_DATA = bytes(range(32)) + bytes(range(100, 116)) + b"\0" * 16


def base(kvs=None, ta=None, tb=None, data=None, **kw):
    a = dict(TENSOR_A, **(ta or {}))
    b = dict(TENSOR_B, **(tb or {}))
    return gguf(BASE_KVS if kvs is None else kvs, [tinfo(**a), tinfo(**b)],
                BASE_DATA if data is None else data, **kw)


def base_layout():
    """Byte offsets of every section and field of the base file, for the truncations."""
    marks = {"magic": 2, "version": 6, "n-tensors": 12, "n-kv": 20, "header-end": 24}
    pos = 24
    for i, k in enumerate(BASE_KVS):
        keylen = struct.unpack("<Q", k[:8])[0]
        marks["kv%d-keylen" % i] = pos + 4
        marks["kv%d-key" % i] = pos + 8 + keylen // 2
        marks["kv%d-type" % i] = pos + 8 + keylen + 2
        marks["kv%d-value" % i] = pos + 8 + keylen + 4 + (len(k) - 12 - keylen) // 2
        pos += len(k)
    marks["kvs-end"] = pos
    for name, t in (("a", TENSOR_A), ("b", TENSOR_B)):
        ti = tinfo(**t)
        marks["tinfo-%s-name" % name] = pos + 8
        marks["tinfo-%s-ndims" % name] = pos + 9 + 2
        marks["tinfo-%s-dims" % name] = pos + 9 + 4 + 4
        marks["tinfo-%s-type" % name] = pos + len(ti) - 10
        marks["tinfo-%s-offset" % name] = pos + len(ti) - 4
        pos += len(ti)
    marks["tinfos-end"] = pos
    data_start = pos + len(pad(pos))
    marks["padding"] = pos + (data_start - pos) // 2 if data_start > pos else pos
    marks["data-start"] = data_start
    marks["tensor-a-data"] = data_start + 16
    marks["tensor-b-data"] = data_start + 40
    return marks


# --- the corpus ---------------------------------------------------------------------------

def files():
    f = {}
    B = base()
    f["ok-base.gguf"] = (B, "valid: every metadata kind, an f32 and an f16 tensor")
    f["ok-version-2.gguf"] = (base(version=2), "valid GGUF v2")
    f["ok-empty.gguf"] = (gguf([], [], padded=False), "valid: 24-byte header, nothing else")
    f["ok-vocab-unpadded.gguf"] = (gguf(BASE_KVS, [], padded=False),
                                   "valid: 0 tensors, file ends right after the metadata")
    f["ok-nested-depth-8.gguf"] = (gguf([kv("x", ARRAY, nested(8))], []),
                                   "valid: arrays nested exactly 8 deep (the limit)")
    f["ok-alignment-1.gguf"] = (gguf([kv("general.alignment", U32, u32(1))],
                                     [tinfo("t", [3], T_F32, 0), tinfo("u", [1], T_F16, 12)],
                                     b"\1" * 14, align=1), "valid: alignment 1, packed tensors")
    f["ok-alignment-64.gguf"] = (gguf([kv("general.alignment", U32, u32(64))],
                                      [tinfo("t", [3], T_F32, 0), tinfo("u", [1], T_F16, 64)],
                                      b"\1" * 66, align=64), "valid: alignment 64")
    f["ok-tensors-reversed.gguf"] = (base(ta=dict(offset=32), tb=dict(offset=0),
                                          data=bytes(range(64))),
                                     "valid: tensor data in a different order than the infos")

    # Truncations of the base file at every section and mid-field.
    for label, n in sorted(base_layout().items(), key=lambda x: x[1]):
        f["trunc-%03d-%s.gguf" % (n, label)] = (B[:n], "base file cut at byte %d (%s)" % (n, label))
    f["ok-trunc-last-byte.gguf"] = (B[:-1], "valid: base file without its last byte (trailing padding)")
    f["trunc-last-data-byte.gguf"] = (B[:base_layout()["data-start"] + 47], "base file cut one byte short of tensor b's end")
    vocab = gguf(BASE_KVS, [], padded=False)
    f["trunc-vocab-mid-strings.gguf"] = (vocab[:80], "vocab-only file cut inside the token strings")
    f["empty.gguf"] = (b"", "0 bytes")

    # Header.
    f["bad-magic.gguf"] = (b"GGML" + B[4:], "magic GGML")
    f["bad-magic-short.gguf"] = (b"GG", "2 bytes")
    f["unsup-version-1.gguf"] = (base(version=1), "GGUF v1")
    f["unsup-version-99.gguf"] = (base(version=99), "version 99")
    f["unsup-version-0.gguf"] = (base(version=0), "version 0")
    f["unsup-big-endian.gguf"] = (base(version=0x03000000), "version 3 byte-swapped (big-endian file)")
    f["huge-n-kv.gguf"] = (base(n_kv=1 << 60), "n_kv 2^60")
    f["huge-n-kv-max.gguf"] = (base(n_kv=M64), "n_kv 2^64-1")
    f["huge-n-tensors.gguf"] = (base(n_tensors=1 << 60), "n_tensors 2^60")
    f["huge-n-tensors-max.gguf"] = (base(n_tensors=M64), "n_tensors 2^64-1")
    f["n-kv-plus-one.gguf"] = (base(n_kv=len(BASE_KVS) + 1), "one metadata pair more than present")
    f["n-tensors-plus-one.gguf"] = (base(n_tensors=3), "one tensor info more than present")
    f["n-kv-and-tensors-sum.gguf"] = (gguf([], [], b"\0" * 240, n_kv=10, n_tensors=6, padded=False),
                                      "n_kv and n_tensors each fit the file, together they do not")

    # Strings and keys.
    f["huge-key-len.gguf"] = (gguf([gstr("k", 1 << 63) + u32(U8) + b"\0"], []), "key length 2^63")
    f["huge-key-len-max.gguf"] = (gguf([gstr("k", M64) + u32(U8) + b"\0"], []), "key length 2^64-1")
    f["key-len-past-eof.gguf"] = (gguf([gstr("key", 40) + u32(U8) + b"\0"], [], padded=False),
                                  "key length 40 with 5 bytes left")
    f["empty-key.gguf"] = (gguf([kv("", U32, u32(1))], []), "empty key")
    f["dup-key.gguf"] = (gguf(BASE_KVS + [kv("llama.context_length", U32, u32(64))], []),
                         "llama.context_length twice")
    f["huge-string-len.gguf"] = (gguf([kv("s", STRING, gstr("abc", 1 << 62))], []),
                                 "string value length 2^62")
    f["huge-string-len-max.gguf"] = (gguf([kv("s", STRING, gstr("abc", M64))], []),
                                     "string value length 2^64-1 (wraps a naive pos + len)")
    f["unknown-value-type.gguf"] = (gguf([kv("x", 13, u32(0))], []), "value type 13")
    f["unknown-value-type-max.gguf"] = (gguf([kv("x", 0xFFFFFFFF, u32(0))], []), "value type 2^32-1")
    f["truncated-scalar.gguf"] = (gguf([kv("x", U64, b"\1\2\3")], [], padded=False),
                                  "u64 value with 3 bytes left")

    # Arrays.
    f["huge-array-u8.gguf"] = (gguf([kv("a", ARRAY, arr(U8, 1 << 62, b"\0" * 8))], []),
                               "u8 array of 2^62 elements")
    f["array-count-wraps-u64.gguf"] = (gguf([kv("a", ARRAY, arr(U64, 1 << 61, b"\0" * 8))], []),
                                       "u64 array of 2^61 elements: count*8 wraps to 0")
    f["array-count-wraps-u32.gguf"] = (gguf([kv("a", ARRAY, arr(U32, 1 << 62, b"\0" * 8))], []),
                                       "u32 array of 2^62 elements: count*4 wraps to 0")
    f["huge-array-strings.gguf"] = (gguf([kv("a", ARRAY, arr(STRING, 1 << 60, gstr("x")))], []),
                                    "string array of 2^60 elements")
    f["array-string-len-huge.gguf"] = (gguf([kv("a", ARRAY, arr(STRING, 2, gstr("x") + gstr("y", 1 << 63)))], []),
                                       "second string of an array has length 2^63")
    f["array-strings-short.gguf"] = (gguf([kv("a", ARRAY, arr(STRING, 5, gstr("x") + gstr("y")))], [],
                                          padded=False), "string array claims 5, holds 2")
    f["unknown-array-type.gguf"] = (gguf([kv("a", ARRAY, arr(13, 1, b"\0" * 8))], []),
                                    "array element type 13")
    f["nested-depth-9.gguf"] = (gguf([kv("x", ARRAY, nested(9))], []), "arrays nested 9 deep (limit 8)")
    f["nested-depth-1000.gguf"] = (gguf([kv("x", ARRAY, nested(1000))], []),
                                   "arrays nested 1000 deep (no stack overflow)")
    f["nested-huge-inner.gguf"] = (gguf([kv("x", ARRAY, arr(ARRAY, 2, arr(U8, 1, b"\0") + arr(I64, 1 << 60, b"")))], []),
                                   "second inner array claims 2^60 i64")
    f["nested-huge-outer.gguf"] = (gguf([kv("x", ARRAY, arr(ARRAY, 1 << 62, arr(U8, 0, b"")))], []),
                                   "array of 2^62 empty arrays")
    f["nested-unknown-inner-type.gguf"] = (gguf([kv("x", ARRAY, arr(ARRAY, 1, arr(99, 1, b"\0")))], []),
                                           "inner array of element type 99")

    # Alignment.
    f["alignment-0.gguf"] = (base(kvs=BASE_KVS + [kv("general.alignment", U32, u32(0))]), "alignment 0")
    f["alignment-3.gguf"] = (base(kvs=BASE_KVS + [kv("general.alignment", U32, u32(3))]), "alignment 3")
    f["alignment-string.gguf"] = (base(kvs=BASE_KVS + [kv("general.alignment", STRING, gstr("32"))]),
                                  "alignment as a string")
    f["alignment-u64.gguf"] = (base(kvs=BASE_KVS + [kv("general.alignment", U64, u64(32))]),
                               "alignment as u64 (must be u32)")
    f["alignment-i32.gguf"] = (base(kvs=BASE_KVS + [kv("general.alignment", I32, u32(32))]),
                               "alignment as i32")
    f["alignment-2g.gguf"] = (base(kvs=BASE_KVS + [kv("general.alignment", U32, u32(1 << 31))]),
                              "alignment 2^31: data section past the end of the file")
    f["alignment-top-bit.gguf"] = (base(kvs=BASE_KVS + [kv("general.alignment", U32, u32(0x80000001))]),
                                   "alignment 0x80000001")

    # Tensor infos.
    f["n-dims-5.gguf"] = (base(ta=dict(ne=[4, 2, 1, 1, 1])), "n_dims 5")
    f["n-dims-huge.gguf"] = (base(ta=dict(ne=[4, 2], n_dims=0xFFFFFFFF)), "n_dims 2^32-1")
    f["dim-zero.gguf"] = (base(ta=dict(ne=[4, 0])), "a dimension of 0")
    f["dim-huge.gguf"] = (base(ta=dict(ne=[1 << 63, 1])), "dimension 2^63 (> INT64_MAX)")
    f["dims-product-overflow.gguf"] = (base(ta=dict(ne=[1 << 32, 1 << 32, 1 << 32])),
                                       "2^32 x 2^32 x 2^32 elements")
    f["row-size-overflow.gguf"] = (base(ta=dict(ne=[1 << 62])), "f32 row of 2^62 elements: 2^64 bytes")
    f["elements-over-int64.gguf"] = (base(ta=dict(ne=[1 << 32, 1 << 31], ttype=24)),
                                     "i8 tensor of 2^63 elements")
    f["huge-tensor-size.gguf"] = (base(ta=dict(ne=[1 << 20, 1 << 20])), "a 4 TiB tensor in a small file")
    f["block-size-mismatch.gguf"] = (base(ta=dict(ne=[31, 1], ttype=T_Q4_0)), "q4_0 row of 31 elements")
    f["unknown-tensor-type.gguf"] = (base(ta=dict(ttype=99)), "tensor type 99")
    f["unknown-tensor-type-4.gguf"] = (base(ta=dict(ttype=4)), "tensor type 4 (removed Q4_2)")
    f["unknown-tensor-type-max.gguf"] = (base(ta=dict(ttype=0xFFFFFFFF)), "tensor type 2^32-1")
    f["huge-tensor-name.gguf"] = (gguf([], [gstr("t", 1 << 62) + u32(1) + u64(1) + u32(0) + u64(0)]),
                                  "tensor name length 2^62")
    f["dup-tensor-name.gguf"] = (base(tb=dict(name="a")), "two tensors named 'a'")

    # Tensor data placement.
    f["tensor-offset-out-of-range.gguf"] = (base(tb=dict(offset=1 << 40)), "offset 2^40")
    f["tensor-offset-wraps.gguf"] = (base(tb=dict(offset=(1 << 64) - 32)),
                                     "offset 2^64-32: data_offset + offset wraps")
    f["tensor-end-wraps.gguf"] = (base(ta=dict(ne=[1 << 61], offset=1 << 63)),
                                  "2^63-byte f32 tensor at offset 2^63: start + size wraps")
    f["tensor-past-eof.gguf"] = (base(tb=dict(offset=64)), "second tensor's data starts at the end")
    f["tensor-misaligned.gguf"] = (base(tb=dict(offset=36)), "offset 36 with alignment 32")
    f["tensors-overlap.gguf"] = (base(ta=dict(ne=[16, 1]), tb=dict(offset=32)),
                                 "a [0, 64) and b [32, 48) overlap")
    f["tensors-same-offset.gguf"] = (base(tb=dict(offset=0)), "a and b both at offset 0")
    f["no-data-section.gguf"] = (gguf([], [tinfo("t", [4], T_F32, 0)], padded=False),
                                 "a tensor but the file ends after the infos")
    return f


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if name.endswith(".gguf") and not name.startswith("fuzz-"):
            os.remove(os.path.join(OUT, name))
    corpus = files()
    lines = []
    for name, (data, why) in sorted(corpus.items()):
        with open(os.path.join(OUT, name), "wb") as fh:
            fh.write(data)
        lines.append("%-36s %6d  %s" % (name, len(data), why))
    with open(os.path.join(OUT, "MANIFEST"), "w") as fh:
        fh.write("# generated by tests/gen_hostile_gguf.py: file, bytes, what is wrong\n")
        fh.write("\n".join(lines) + "\n")
    print("wrote %d files to %s" % (len(corpus), OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
