#!/usr/bin/env python3
"""The view suite's checks around one rvis-view run.

  view_test.py MODE --view EXE --shot-check EXE --pak PAK --zip yes|no -- ARGS...

MODE verify:     exit 0, and the JSON report has the asked frames, gpu_queries > 0 and
                 gpu_false_culls == 0.
MODE sabotage:   exit 1, and stderr names a GPU false cull of the sabotaged object.
MODE screenshot: exit 0, and the screenshot shows the level below the overlay
                 (rvis-view-shot-check).
MODE refuses:    exit 2 with a message (bad arguments).
Exit 77 (skipped) when rvis-view cannot make an OpenGL context (its exit 3), or a map is
asked for while the pak or libzip is absent."""
import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def skip(message):
    print("skipped: " + message)
    sys.exit(77)


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    mode, opts, args = argv[0], argv[1:split], argv[split + 1:]
    o = dict(zip(opts[0::2], opts[1::2]))
    if "--map" in args and not args[args.index("--map") + 1].endswith(".bsp"):
        if o["--zip"] != "yes":
            skip("rvis-view built without libzip: no .pk3 maps")
        if not os.path.isfile(o["--pak"]):
            skip(o["--pak"] + " absent (Debian package openarena-081-maps)")
    with tempfile.TemporaryDirectory(prefix="rvis-view-") as tmp:
        report = os.path.join(tmp, "report.json")
        extra = []
        if mode in ("verify", "sabotage"):
            extra = ["--json", report]
        if mode == "screenshot":
            extra = ["--screenshot", tmp]
        cmd = [o["--view"]] + args + extra + ["--quiet"]
        print("$ " + " ".join(cmd), flush=True)
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sys.stdout.write(run.stdout[-3000:])
        sys.stdout.write(run.stderr[-3000:])
        if run.returncode == 3:
            skip("no OpenGL 3.3 core context here (rvis-view exit 3)")
        if mode == "refuses":
            if run.returncode != 2 or "rvis-view:" not in run.stderr:
                fail("expected exit 2 with a message, got %d" % run.returncode)
            return
        if mode == "sabotage":
            if run.returncode != 1:
                fail("the sabotaged run exited %d, not 1: the GPU judge missed a forced cull" % run.returncode)
            if "GPU FALSE CULL at frame 0: object " not in run.stderr or "--sabotage-object" not in run.stderr:
                fail("stderr does not name the sabotaged object as a GPU false cull at frame 0")
            r = json.load(open(report))
            if r["gpu_false_culls"] < 1 or r["gpu_queries"] < 1:
                fail("the report counts %d false culls in %d queries" % (r["gpu_false_culls"], r["gpu_queries"]))
            return
        if run.returncode != 0:
            fail("rvis-view exited %d" % run.returncode)
        if mode == "verify":
            r = json.load(open(report))
            frames = int(args[args.index("--frames") + 1])
            print("frames %d, gpu_queries %d, gpu_false_culls %d, frame_us p50 %s" %
                  (r["frames"], r["gpu_queries"], r["gpu_false_culls"], r["frame_us"]["p50"]))
            if r["frames"] != frames:
                fail("the report has %d frames, not %d" % (r["frames"], frames))
            if r["gpu_verified_frames"] != frames or r["gpu_queries"] <= 0:
                fail("the GPU judge ran on %d frames with %d queries" % (r["gpu_verified_frames"], r["gpu_queries"]))
            if r["gpu_false_culls"] != 0:
                fail("%d GPU false culls" % r["gpu_false_culls"])
            return
        if mode == "screenshot":
            shots = sorted(f for f in os.listdir(tmp) if f.endswith(".png"))
            if not shots:
                fail("no screenshot written")
            # the overlay panel covers the top of the picture: examine the lower 60 %
            check = subprocess.run([o["--shot-check"], os.path.join(tmp, shots[0]), "0.4", "0.5", "32"])
            if check.returncode != 0:
                fail("the screenshot does not show the level")
            return
        fail("unknown mode " + mode)


main()
