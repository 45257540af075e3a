"""vkllm for Python: the shared library (libvkllm) through ctypes, with nothing else to install.

    import vkllm
    for d in vkllm.devices():
        print(d.index, d.name, d.type)
    with vkllm.Model("stories260K.gguf", device="llvmpipe") as m:
        print(m.tokenize("Once upon a time"))
        for piece in m.generate("Once upon a time", max_tokens=64):
            print(piece, end="", flush=True)

The library is found through the VKLLM_LIBRARY environment variable (a path to libvkllm.so,
libvkllm.dylib or vkllm.dll), else beside this file, else where the system looks
(ctypes.util.find_library). Failures raise vkllm.Error with the library's own message.

Threads: a Model (its device context, weights and session) must be used by one thread at a time,
the generator that generate() returns included: make it, step it and close it on one thread, or
guard the Model with a lock. generate() runs the library's step API on the calling thread: each
next() decodes one token and returns the text that became final, so the caller (a UI loop, an
async task via run_in_executor) decides when the GPU works. Different Models are independent.
tokenize()/detokenize() use only the model's immutable tokenizer. See docs/embedding.md.
"""
import ctypes
import ctypes.util
import os
import sys

__all__ = ["Error", "Device", "Model", "devices", "version", "library_path"]

# --- the C structures (include/vkllm.h; tests/test_python.py checks their sizes against a C compiler's)

MAX_HEAPS, MAX_MEMORY_TYPES, MAX_COOPMAT_SHAPES = 16, 32, 16
MAX_DEVICES = 8  # VKLLM_MAX_DEVICES: a layer split's devices
_c_int, _u32, _u64, _i32 = ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32


class _CoopmatShape(ctypes.Structure):
    _fields_ = [(n, _u32) for n in ("m", "n", "k", "a_type", "b_type", "c_type", "result_type")]


class _MemoryType(ctypes.Structure):
    _fields_ = [("flags", _u32), ("heap", _u32)]


class _DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("index", _u32), ("name", ctypes.c_char * 256), ("vendor_id", _u32), ("vendor", ctypes.c_char * 32),
        ("device_id", _u32), ("type", _c_int), ("driver_name", ctypes.c_char * 256),
        ("driver_info", ctypes.c_char * 256), ("driver_version", _u32), ("api_version", _u32),
        ("heap_count", _u32), ("heap_size", _u64 * MAX_HEAPS), ("heap_device_local", _u32 * MAX_HEAPS),
        ("memory_budget", _c_int), ("heap_budget", _u64 * MAX_HEAPS), ("heap_usage", _u64 * MAX_HEAPS),
        ("memory_type_count", _u32), ("memory_types", _MemoryType * MAX_MEMORY_TYPES), ("unified_memory", _c_int),
        ("subgroup_size", _u32), ("subgroup_size_min", _u32), ("subgroup_size_max", _u32),
        ("subgroup_size_control", _c_int), ("subgroup_ops", _u32), ("fp16_arith", _c_int), ("int8_arith", _c_int),
        ("int64_arith", _c_int), ("storage_16bit", _c_int), ("storage_8bit", _c_int),
        ("integer_dot_product", _c_int), ("integer_dot_product_accel", _c_int), ("buffer_device_address", _c_int),
        ("cooperative_matrix", _c_int), ("coopmat_shape_count", _u32),
        ("coopmat_shapes", _CoopmatShape * MAX_COOPMAT_SHAPES), ("max_storage_buffer_range", _u64),
        ("max_memory_allocation_size", _u64), ("min_storage_buffer_offset_alignment", _u64),
        ("max_shared_memory", _u32), ("max_workgroup_invocations", _u32), ("max_workgroup_size", _u32 * 3),
        ("max_workgroup_count", _u32 * 3), ("max_push_constants", _u32), ("max_texel_buffer_elements", _u64),
        ("max_uniform_buffer_range", _u64), ("timestamps", _c_int), ("timestamp_period_ns", ctypes.c_float),
        ("timestamp_valid_bits", _u32), ("pipeline_statistics", _c_int), ("has_compute_queue", _c_int),
        ("usable", _c_int), ("profile", ctypes.c_char * 32), ("min_texel_buffer_offset_alignment", _u64),
        ("min_uniform_buffer_offset_alignment", _u64),
    ]


class _CtxParams(ctypes.Structure):
    _fields_ = [("device", _c_int), ("validate", _c_int), ("tuning", ctypes.c_char_p), ("compile_only", _c_int)]


_PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_float, ctypes.c_void_p)


class _ModelParams(ctypes.Structure):
    _fields_ = [("progress", _PROGRESS_FN), ("progress_user_data", ctypes.c_void_p), ("n_devices", _u32),
                ("devices", ctypes.c_void_p * MAX_DEVICES), ("tensor_split", ctypes.c_float * MAX_DEVICES)]


class _SessionParams(ctypes.Structure):
    _fields_ = [("n_ctx", _u32), ("n_ubatch", _u32), ("type_k", _c_int), ("type_v", _c_int),
                ("pool", ctypes.c_void_p)]


class _SamplingParams(ctypes.Structure):
    _fields_ = [
        ("temperature", ctypes.c_float), ("top_k", _i32), ("top_p", ctypes.c_float), ("min_p", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float), ("frequency_penalty", ctypes.c_float),
        ("presence_penalty", ctypes.c_float), ("penalty_last_n", _i32), ("seed", _u64), ("has_seed", _c_int),
        ("order", ctypes.c_char_p), ("bias_tokens", ctypes.POINTER(_i32)), ("bias_values", ctypes.POINTER(ctypes.c_float)),
        ("n_bias", _u32),
    ]


_TEXT_FN = ctypes.CFUNCTYPE(_c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
_CANCEL_FN = ctypes.CFUNCTYPE(_c_int, ctypes.c_void_p)


class _GenerateParams(ctypes.Structure):
    _fields_ = [
        ("prompt", ctypes.c_char_p), ("prompt_len", ctypes.c_size_t), ("prompt_tokens", ctypes.POINTER(_i32)),
        ("n_prompt_tokens", ctypes.c_size_t), ("n_predict", _i32), ("stop", ctypes.POINTER(ctypes.c_char_p)),
        ("n_stop", _u32), ("add_bos", _c_int), ("parse_special", _c_int), ("keep_history", _c_int),
        ("cache_prompt", _c_int), ("prefill_chunk", _u32), ("n_probs", _i32), ("json_object", _c_int),
        ("grammar", ctypes.c_char_p), ("grammar_len", ctypes.c_size_t), ("share", ctypes.c_void_p), ("n_share", _u32),
        ("cancel", _CANCEL_FN), ("cancel_user_data", ctypes.c_void_p), ("sampling", _SamplingParams),
        ("on_piece", ctypes.c_void_p), ("piece_user_data", ctypes.c_void_p),
    ]


class _GenerateStats(ctypes.Structure):
    _fields_ = [
        ("n_prompt", _u32), ("n_prompt_cached", _u32), ("n_prompt_shared", _u32), ("n_generated", _u32),
        ("ttft_ms", ctypes.c_double), ("prefill_ms", ctypes.c_double), ("prefill_tps", ctypes.c_double),
        ("itl_mean_ms", ctypes.c_double), ("itl_p50_ms", ctypes.c_double), ("itl_p90_ms", ctypes.c_double),
        ("itl_max_ms", ctypes.c_double), ("decode_tps", ctypes.c_double), ("total_ms", ctypes.c_double),
        ("kv_bytes_used", _u64), ("kv_bytes_allocated", _u64), ("kv_bytes_per_token", _u64), ("device_bytes", _u64),
        ("seed", _u64), ("stop_reason", _c_int), ("kv_bytes_cached", _u64),
    ]


# --- finding and binding the library

def _candidates():
    env = os.environ.get("VKLLM_LIBRARY")
    if env:
        return [env]  # asked for: that one or an error, no silent fallback
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.platform == "win32":
        names = ["libvkllm.dll", "vkllm.dll"]
    elif sys.platform == "darwin":
        names = ["libvkllm.dylib", "libvkllm.0.dylib"]
    else:
        names = ["libvkllm.so", "libvkllm.so.0"]
    found = [os.path.join(here, n) for n in names if os.path.exists(os.path.join(here, n))]
    system = ctypes.util.find_library("vkllm")
    return found + ([system] if system else []) + names  # the bare names: the loader's own search


def _load():
    errors = []
    for path in _candidates():
        try:
            if sys.platform == "win32" and os.path.dirname(path) and hasattr(os, "add_dll_directory"):
                os.add_dll_directory(os.path.dirname(os.path.abspath(path)))  # its own DLLs beside it
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("vkllm: cannot load the vkllm library (set VKLLM_LIBRARY to its path): " + "; ".join(errors))


_lib, library_path = _load()

_P = ctypes.c_void_p
_SIGS = {
    "vkllm_status_name": (ctypes.c_char_p, [_c_int]),
    "vkllm_last_error": (ctypes.c_char_p, []),
    "vkllm_version": (ctypes.c_char_p, []),
    "vkllm_device_type_str": (ctypes.c_char_p, [_c_int]),
    "vkllm_devices_list": (_c_int, [ctypes.POINTER(ctypes.POINTER(_DeviceInfo)), ctypes.POINTER(_u32)]),
    "vkllm_devices_free": (None, [ctypes.POINTER(_DeviceInfo)]),
    "vkllm_ctx_params_default": (_CtxParams, []),
    "vkllm_ctx_init": (_c_int, [ctypes.POINTER(_CtxParams), ctypes.POINTER(_P)]),
    "vkllm_ctx_free": (None, [_P]),
    "vkllm_ctx_device": (ctypes.POINTER(_DeviceInfo), [_P]),
    "vkllm_model_params_default": (_ModelParams, []),
    "vkllm_model_load": (_c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_ModelParams), ctypes.POINTER(_P)]),
    "vkllm_model_free": (None, [_P]),
    "vkllm_model_n_devices": (_u32, [_P]),
    "vkllm_model_device": (_c_int, [_P, _u32, ctypes.POINTER(_P), ctypes.POINTER(_u32), ctypes.POINTER(_u32)]),
    "vkllm_session_device_ms": (ctypes.c_double, [_P, _u32]),
    "vkllm_session_params_default": (_SessionParams, []),
    "vkllm_session_init": (_c_int, [_P, ctypes.POINTER(_SessionParams), ctypes.POINTER(_P)]),
    "vkllm_session_free": (None, [_P]),
    "vkllm_session_n_ctx": (_u32, [_P]),
    "vkllm_tokenize": (_c_int, [_P, ctypes.c_char_p, ctypes.c_size_t, _c_int, _c_int, ctypes.POINTER(_i32),
                                ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "vkllm_detokenize": (_c_int, [_P, ctypes.POINTER(_i32), ctypes.c_size_t, _c_int, ctypes.POINTER(_P)]),
    "vkllm_free": (None, [_P]),
    "vkllm_generate_params_default": (_GenerateParams, []),
    "vkllm_gen_start": (_c_int, [_P, ctypes.POINTER(_GenerateParams), _TEXT_FN, _P, ctypes.POINTER(_P)]),
    "vkllm_gen_step": (_c_int, [ctypes.POINTER(_P), _u32]),
    "vkllm_gen_done": (_c_int, [_P]),
    "vkllm_gen_status": (_c_int, [_P]),
    "vkllm_gen_stop_reason": (_c_int, [_P]),
    "vkllm_gen_stats": (None, [_P, ctypes.POINTER(_GenerateStats)]),
    "vkllm_gen_free": (None, [_P]),
    "vkllm_stop_reason_str": (ctypes.c_char_p, [_c_int]),
}
for _name, (_res, _args) in _SIGS.items():
    _f = getattr(_lib, _name)
    _f.restype, _f.argtypes = _res, _args


class Error(Exception):
    """A failed library call: .status is the symbolic name ("VKLLM_STATUS_DEVICE_OOM"), the text the
    library's explanation (vkllm_last_error)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _check(st, what):
    if st != 0:
        name = _lib.vkllm_status_name(st).decode()
        detail = (_lib.vkllm_last_error() or b"").decode("utf-8", "replace")
        raise Error(name, "%s: %s (%s)" % (what, detail or name, name))


def version():
    return _lib.vkllm_version().decode()


class Device:
    """One Vulkan device as vkllm sees it (the main fields of struct vkllm_device_info)."""

    def __init__(self, d):
        self.index = d.index
        self.name = d.name.decode("utf-8", "replace")
        self.vendor = d.vendor.decode("utf-8", "replace")
        self.type = _lib.vkllm_device_type_str(d.type).decode()
        self.driver_name = d.driver_name.decode("utf-8", "replace")
        self.driver_info = d.driver_info.decode("utf-8", "replace")
        self.api_version = "%d.%d.%d" % (d.api_version >> 22 & 0x7F, d.api_version >> 12 & 0x3FF, d.api_version & 0xFFF)
        self.device_local_bytes = sum(d.heap_size[i] for i in range(d.heap_count) if d.heap_device_local[i])
        self.unified_memory = bool(d.unified_memory)
        self.usable = bool(d.usable)

    def __repr__(self):
        return "Device(%d, %r, %s)" % (self.index, self.name, self.type)


def devices():
    """Every Vulkan device (vkllm_devices_list), as Device objects."""
    arr, n = ctypes.POINTER(_DeviceInfo)(), _u32()
    _check(_lib.vkllm_devices_list(ctypes.byref(arr), ctypes.byref(n)), "listing devices")
    try:
        return [Device(arr[i]) for i in range(n.value)]
    finally:
        _lib.vkllm_devices_free(arr)


def _device_index(device):
    if device is None:
        return -1  # VKLLM_DEVICE, else the best device (a discrete GPU first)
    if isinstance(device, int):
        return device
    devs = devices()
    for d in devs:  # a name: the first usable device whose name contains it, ignoring case
        if d.usable and str(device).lower() in d.name.lower():
            return d.index
    raise Error("VKLLM_STATUS_NOT_FOUND", "no usable device's name contains %r (devices: %s)"
                % (device, ", ".join(d.name for d in devs) or "none"))


class Model:
    """A GGUF model on a device (or split by layers over several), with one session (KV cache) to
    generate on.

    device: None (VKLLM_DEVICE or the best), an index from devices(), or a name to look for in the
    device names (case-insensitive: "radeon", "llvmpipe"). devices: instead of device, a list of
    them (indexes or names; one may come twice: two contexts on it) to split the layers over, as
    `vkllm run --devices`; tensor_split: with devices, a share for each (proportions, as
    `--tensor-split 3,1`; None: by each device's free memory). n_ctx: positions of the KV cache
    (0: the model's training context, at most 4096). progress: called with the load's fraction
    done. After loading, .device is the (first) device's name and .split lists (device name, first
    layer, end layer) for each device holding layers. Free it with close() (or a with block); the
    device memory goes then."""

    def __init__(self, path, device=None, n_ctx=0, progress=None, devices=None, tensor_split=None):
        self._ctx = self._model = self._session = None
        self._ctxs = []
        if devices is not None:
            devices = list(devices)
            if device is not None:
                raise ValueError("give device or devices, not both")
            if not 1 <= len(devices) <= MAX_DEVICES:
                raise ValueError("devices: 1 to %d of them, not %d" % (MAX_DEVICES, len(devices)))
        if tensor_split is not None:
            tensor_split = [float(x) for x in tensor_split]
            if devices is None or len(tensor_split) != len(devices):
                raise ValueError("tensor_split: a share for each of devices (%d shares, %s devices)"
                                 % (len(tensor_split), "no" if devices is None else len(devices)))
            if any(not x >= 0 for x in tensor_split) or not any(tensor_split):
                raise ValueError("tensor_split: shares of 0 or more, not all 0: %r" % tensor_split)
        try:
            for d in devices if devices is not None else [device]:
                cp = _lib.vkllm_ctx_params_default()
                cp.device = _device_index(d)
                ctx = _P()
                _check(_lib.vkllm_ctx_init(ctypes.byref(cp), ctypes.byref(ctx)), "opening the device %r" % (d,))
                self._ctxs.append(ctx)
            self._ctx = self._ctxs[0]
            mp = _lib.vkllm_model_params_default()
            if progress is not None:
                mp.progress = _PROGRESS_FN(lambda f, _ud: progress(f))
            if devices is not None:
                mp.n_devices = len(self._ctxs)
                for i, ctx in enumerate(self._ctxs):
                    mp.devices[i] = ctx.value
                for i, x in enumerate(tensor_split or []):
                    mp.tensor_split[i] = x
            model = _P()
            _check(_lib.vkllm_model_load(self._ctx, os.fsencode(path), ctypes.byref(mp), ctypes.byref(model)),
                   "loading %s" % path)
            self._model = model
            sp = _lib.vkllm_session_params_default()
            sp.n_ctx = n_ctx
            session = _P()
            _check(_lib.vkllm_session_init(model, ctypes.byref(sp), ctypes.byref(session)), "creating a session")
            self._session = session
        except BaseException:
            self.close()
            raise
        self.device = _lib.vkllm_ctx_device(self._ctx).contents.name.decode("utf-8", "replace")
        self.split = []
        for i in range(_lib.vkllm_model_n_devices(self._model)):
            ctx, begin, end = _P(), _u32(), _u32()
            _check(_lib.vkllm_model_device(self._model, i, ctypes.byref(ctx), ctypes.byref(begin), ctypes.byref(end)),
                   "reading the split")
            name = _lib.vkllm_ctx_device(ctx).contents.name.decode("utf-8", "replace")
            self.split.append((name, begin.value, end.value))
        self.n_ctx = _lib.vkllm_session_n_ctx(self._session)
        self.last_stats = None

    def device_ms(self):
        """Milliseconds the session has spent in each device's part of its steps (one number per
        entry of .split), as `vkllm bench` reports for a split model."""
        self._live()
        return [_lib.vkllm_session_device_ms(self._session, i) for i in range(len(self.split))]

    def close(self):
        """Free the session, the weights and the device context (in that order). Idempotent."""
        if self._session:
            _lib.vkllm_session_free(self._session)
        if self._model:
            _lib.vkllm_model_free(self._model)
        for ctx in reversed(self._ctxs):  # after the model, which uses them all
            _lib.vkllm_ctx_free(ctx)
        self._ctxs = []
        self._ctx = self._model = self._session = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit the module's globals may be gone already
            pass

    def _live(self):
        if not self._session:
            raise Error("VKLLM_STATUS_INVALID_ARGUMENT", "the model is closed")

    def tokenize(self, text, add_bos=True, parse_special=False):
        """The token ids of text (str or bytes). add_bos: True, False, or None (as the model asks)."""
        self._live()
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        bos = -1 if add_bos is None else int(bool(add_bos))
        cap = len(data) + 8
        while True:
            out, n = (_i32 * cap)(), ctypes.c_size_t()
            _check(_lib.vkllm_tokenize(self._model, data, len(data), bos, int(parse_special), out, cap,
                                       ctypes.byref(n)), "tokenizing")
            if n.value <= cap:
                return list(out[:n.value])
            cap = n.value

    def detokenize(self, ids, render_special=False):
        """The text of token ids."""
        self._live()
        arr, out = (_i32 * len(ids))(*ids), _P()
        _check(_lib.vkllm_detokenize(self._model, arr, len(ids), int(render_special), ctypes.byref(out)),
               "detokenizing")
        try:
            return ctypes.string_at(out).decode("utf-8", "replace")
        finally:
            _lib.vkllm_free(out)

    def generate(self, prompt, max_tokens=64, temperature=0.0, top_k=None, top_p=None, min_p=None,
                 repeat_penalty=None, seed=None, stop=(), add_bos=None, parse_special=False, as_bytes=False):
        """Yield the reply to prompt piece by piece as it is generated: str (whole UTF-8 characters),
        or bytes with as_bytes. temperature 0 is greedy; the other sampling options default to the
        library's (llama.cpp's). Generation starts at the first next(); each next() then decodes
        one token on the calling thread. Closing the generator early (break) stops it. After it
        ends, last_stats holds the metrics (tokens/s, stop reason...). Raises Error on failure."""
        self._live()
        gp = _lib.vkllm_generate_params_default()
        data = prompt.encode("utf-8") if isinstance(prompt, str) else bytes(prompt)
        gp.prompt, gp.prompt_len = data, len(data)
        gp.n_predict = -1 if max_tokens is None else int(max_tokens)
        gp.add_bos = -1 if add_bos is None else int(bool(add_bos))
        gp.parse_special = int(parse_special)
        s = gp.sampling
        s.temperature = float(temperature)
        if top_k is not None: s.top_k = int(top_k)
        if top_p is not None: s.top_p = float(top_p)
        if min_p is not None: s.min_p = float(min_p)
        if repeat_penalty is not None: s.repeat_penalty = float(repeat_penalty)
        if seed is not None: s.seed, s.has_seed = int(seed), 1
        gp.sampling = s
        stops = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in ([stop] if isinstance(stop, (str, bytes)) else stop)]
        stop_arr = (ctypes.c_char_p * max(1, len(stops)))(*stops)
        gp.stop, gp.n_stop = stop_arr, len(stops)
        return self._stream(gp, (data, stops, stop_arr), as_bytes)

    def _stream(self, gp, keep_alive, as_bytes):
        pieces = []

        def on_text(text, n, _ud):  # on this thread, inside gen_start/gen_step
            pieces.append(ctypes.string_at(text, n))
            return 0

        fn = _TEXT_FN(on_text)  # referenced until the gen is freed
        gen = _P()
        _check(_lib.vkllm_gen_start(self._session, ctypes.byref(gp), fn, None, ctypes.byref(gen)), "generating")
        self.last_stats = None
        try:
            while True:
                while pieces:
                    p = pieces.pop(0)
                    yield p if as_bytes else p.decode("utf-8", "replace")
                if _lib.vkllm_gen_done(gen):
                    break
                _check(_lib.vkllm_gen_step(ctypes.byref(gen), 1), "generating")
            _check(_lib.vkllm_gen_status(gen), "generating")
            st = _GenerateStats()
            _lib.vkllm_gen_stats(gen, ctypes.byref(st))
            self.last_stats = {k: getattr(st, k) for k, _ in _GenerateStats._fields_}
            self.last_stats["stop_reason"] = _lib.vkllm_stop_reason_str(st.stop_reason).decode()
        finally:
            _lib.vkllm_gen_free(gen)
            del keep_alive, fn
