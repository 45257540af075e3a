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
  pipeline_cache      the pipeline cache file truncated, corrupted, foreign (another device's
                      VkPipelineCacheHeaderVersionOne), garbage, or in the old format: ignored
                      before the driver sees it and rewritten valid; a FIFO, a link to /dev/null or
                      a device node at its path left alone (a FIFO hung the device's opening); a
                      directory there leaves no temporary file behind.

  test_harden.py VKLLM [PART...]   (all three parts by default)
"""
import os, pty, select, shutil, signal, stat, struct, subprocess, sys, tempfile, threading, time

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


# --- the pipeline cache -------------------------------------------------------------------------------

HEADER = struct.Struct("<8sIIQQIIII16s")  # runtime/vk/pipeline.c: struct cache_file_header


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
    return h


def envelope(vendor, device, driver, uuid, data):
    return HEADER.pack(b"VKLLMPC1", HEADER.size, 8, len(data), fnv1a64(data), vendor, device, driver, 0, uuid) + data


def valid_cache(b):
    """The fields of a valid file, or None."""
    if len(b) < HEADER.size:
        return None
    magic, hs, abi, n, h, vendor, device, driver, _, uuid = HEADER.unpack_from(b)
    data = b[HEADER.size:]
    if magic != b"VKLLMPC1" or hs != HEADER.size or n != len(data) or fnv1a64(data) != h or len(data) < 32:
        return None
    size, version, dv, dd = struct.unpack_from("<IIII", data)
    if version != 1 or (dv, dd, data[16:32]) != (vendor, device, uuid):
        return None
    return vendor, device, driver, uuid, data


def pipeline_cache(tmp):
    home = os.path.join(tmp, "xdg")
    env = dict(os.environ, XDG_CACHE_HOME=home, VKLLM_LOG="debug")
    env.pop("VKLLM_PIPELINE_CACHE", None)
    folder = os.path.join(home, "vkllm")

    def open_device():
        return run(["selftest", "--list"], env, timeout=30)

    rc, err = open_device()
    files = os.listdir(folder) if os.path.isdir(folder) else []
    if not check(rc == 0 and len(files) == 1, "a cache file is written: rc %s %s %s" % (rc, files, err[-500:])):
        return
    path = os.path.join(folder, files[0])
    good = open(path, "rb").read()
    fields = valid_cache(good)
    if check(fields, "the file is a valid cache (envelope, hash, the driver's header): %r" % good[:80]):
        bad_cache_files(open_device, path, folder, good, fields)
    special_cache_paths(open_device, path, folder)


def bad_cache_files(open_device, path, folder, good, fields):
    vendor, device, driver, uuid, data = fields
    rc, err = open_device()
    check(rc == 0 and "of the driver's data" in err and "ignored" not in err, "a valid file is handed to the driver: %s" % err[-300:])

    foreign_hdr = struct.pack("<IIII", 32, 1, 0x10de, 0x2684) + bytes(range(16))  # an RTX 4090's, say
    bad = {
        "truncated": (good[:-5], "truncated"),
        "corrupted": (good[:-1] + bytes([good[-1] ^ 0x55]), "corrupted"),
        "another device's file": (envelope(0x10de, 0x2684, driver, bytes(range(16)), foreign_hdr + b"\x07" * 4000),
                                  "another device"),
        "this device's name on another device's data": (envelope(vendor, device, driver, uuid, foreign_hdr + b"\x07" * 64),
                                                         "driver's header is not this device's"),
        "another driver version": (envelope(vendor, device, driver + 1, uuid, data), "another driver version"),
        "the old format (the driver's data alone)": (data, ""),  # lavapipe's: shorter than the header
        "garbage": (os.urandom(100000), "not a vkllm pipeline cache"),
    }
    for what, (content, why) in bad.items():
        open(path, "wb").write(content)
        rc, err = open_device()
        check(rc == 0 and why in err and "ignored" in err and "of the driver's data" not in err,
              "cache file %s: ignored before the driver sees it (%s): rc %s %s" % (what, why, rc, err[-400:]))
        now = open(path, "rb").read()
        check(valid_cache(now) and valid_cache(now)[:4] == fields[:4], "cache file %s: rewritten valid" % what)
        check(os.listdir(folder) == [os.path.basename(path)], "cache file %s: nothing else left: %s" % (what, os.listdir(folder)))


def special_cache_paths(open_device, path, folder):
    files = [os.path.basename(path)]
    # what is not a regular file is not replaced by one (nor waited on: a FIFO hung the open)
    specials = [("a FIFO", lambda: os.mkfifo(path), stat.S_ISFIFO),
                ("a link to /dev/null", lambda: os.symlink("/dev/null", path), stat.S_ISLNK)]
    if ROOT:
        specials.append(("a device node", lambda: os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3)), stat.S_ISCHR))
    for what, make, kind in specials:
        os.remove(path)
        make()
        rc, err = open_device()
        check(rc == 0 and kind(os.lstat(path).st_mode) and os.listdir(folder) == [files[0]],
              "cache path is %s: the device opens, it stays as it was, nothing left beside it: rc %s %s" % (what, rc, err[-300:]))

    # a directory there: the rename fails, and the temporary file goes (it was left behind)
    os.remove(path)
    os.mkdir(path)
    rc, err = open_device()
    check(rc == 0 and os.path.isdir(path) and os.listdir(folder) == [files[0]] and "cannot rename" in err,
          "cache path is a directory: no temporary file left: rc %s %s %s" % (rc, os.listdir(folder), err[-300:]))
    os.rmdir(path)


def main():
    t0 = time.monotonic()
    times = []
    with tempfile.TemporaryDirectory(prefix="vkllm-harden-") as tmp:
        for f in (make_model_outputs, model_changed, pipeline_cache):
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
