#!/usr/bin/env python3
"""Runs rvis-walk --verify on every map of a Quake III pak (by default the 50 maps of
openarena-081-maps) and prints one table row per map and the totals.

    tools/sweep_maps.py                          # build/examples/rvis-walk, every frame verified
    tools/sweep_maps.py -w build-walk/examples/rvis-walk -j 2 --verify-every 2
    tools/sweep_maps.py --maps oa_dm4,oa_ctf2 -- --occlusion-width 512
    tools/sweep_maps.py --depth-feed --maps city,oa_dm1,oa_dm2,oa_dm3,oa_dm4,oa_dm5,oa_dm6,oa_dm7,oa_ctf2

Each map is walked twice: with --verify (objects, occluders, drawn and truly visible
means, draw ratio, false culls) and, unless --no-timing, without it for the frame time
(rvis's frame calls alone, p50; run those with -j 1 on a quiet machine if the times
matter). With --depth-feed each map is walked twice more, both runs with rvis-walk
--depth-feed, and a second table compares: draw ratio without and with the feed, false
culls with it, the feed stage (p50 and p99 of the frames whose feed rvis used, from the
run without --verify), feeds used and ignored, the path's cuts and how many of their
feeds rvis used (it should use none), and the tests the feed alone answered hidden. The
name "city" stands for the embedded city (its first --city-frames frames). Extra arguments after -- go to both runs. Per-map JSON reports, stderr and exit
codes are kept in --out (a fresh temporary directory by default); --reuse takes a map's
runs from there instead of running them again, so an interrupted sweep resumes, two
sweeps over different --maps share one table, and a finished one prints again.

Exit code: 1 when any map had a false cull (or exceeded a limit given after --), 2 when
none did but a map could not be loaded or run, 0 otherwise.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import zipfile

DEFAULT_PAK = "/usr/share/games/openarena/baseoa/pak1-maps.pk3"


def map_names(pak):
    with zipfile.ZipFile(pak) as z:
        names = [n for n in z.namelist() if n.startswith("maps/") and n.lower().endswith(".bsp")]
    return sorted(n[len("maps/"):-len(".bsp")] for n in names)


def run(walk, pak, name, out, verify, every, extra, reuse, feed=False, city_frames=120):
    """One rvis-walk run; returns (exit code, report dict or None, last stderr line)."""
    tag = ("verify" if verify else "timing") + ("-feed" if feed else "")
    json_path = os.path.join(out, f"{name}.{tag}.json")
    err_path = os.path.join(out, f"{name}.{tag}.err")
    code_path = os.path.join(out, f"{name}.{tag}.code")
    if reuse and os.path.exists(code_path) and os.path.exists(err_path):
        with open(code_path) as f:
            code = int(f.read())
    else:
        scene = ["--frames", str(city_frames)] if name == "city" else ["--map", f"{pak}:maps/{name}.bsp"]
        args = [walk] + scene + ["--quiet", "--json", json_path]
        if feed:
            args += ["--depth-feed"]
        if verify:
            args += ["--verify", "--verify-every", str(every)]
        args += extra
        with open(err_path, "w") as err:
            code = subprocess.call(args, stdout=subprocess.DEVNULL, stderr=err)
        with open(code_path, "w") as f:
            f.write(f"{code}\n")
    report = None
    if os.path.exists(json_path) and os.path.getsize(json_path) > 0:
        with open(json_path) as f:
            report = json.load(f)
    with open(err_path) as f:
        lines = [l.strip() for l in f if l.strip()]
    return code, report, lines[-1] if lines else ""


def sweep_one(opts, name):
    common = (opts.walk, opts.pak, name, opts.out)
    code, report, last = run(*common, True, opts.verify_every, opts.extra, opts.reuse, city_frames=opts.city_frames)
    row = {"map": name, "code": code, "report": report, "message": last, "frame_p50": None,
           "feed": None, "feed_code": None, "feed_timing": None}
    if report is not None and code in (0, 1) and not opts.no_timing:
        tcode, treport, tlast = run(*common, False, 1, opts.extra, opts.reuse, city_frames=opts.city_frames)
        if treport is not None and tcode == 0:
            row["frame_p50"] = treport["frame_us"]["p50"]
    if opts.depth_feed and report is not None:
        fcode, freport, flast = run(*common, True, opts.verify_every, opts.extra, opts.reuse, True, opts.city_frames)
        row["feed"], row["feed_code"], row["feed_message"] = freport, fcode, flast
        if freport is not None and fcode in (0, 1) and not opts.no_timing:
            tcode, treport, tlast = run(*common, False, 1, opts.extra, opts.reuse, True, opts.city_frames)
            if treport is not None and tcode == 0:
                row["feed_timing"] = treport
    return row


def feed_table(rows):
    """The --depth-feed comparison; returns the rows with a false cull or an error."""
    print()
    print("With --depth-feed (320x180, one frame late; stage times from the runs without --verify):")
    print()
    print("| scene | frames | draw ratio without | with | false culls | feed stage µs p50 / p99 "
          "| feeds used | ignored | cuts (used) | hidden by the feed alone per frame | |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    bad = []
    for row in rows:
        r, f, t = row["report"], row["feed"], row["feed_timing"]
        if r is None or f is None or row["feed_code"] not in (0, 1):
            bad.append(row)
            print(f"| {row['map']} | | | | | | | | | | {row.get('feed_message') or 'not run'} |")
            continue
        d = f["depth_feed"]
        used = (t or f)["depth_feed"]["used_us"]
        ignored = d["ignored_motion"] + d["ignored_projection"] + d["ignored_age"]
        note = "FALSE CULLS" if f["false_culls"] else ("" if row["feed_code"] == 0 else row["feed_message"])
        if note:
            bad.append(row)
        print(f"| {row['map']} | {f['frames']} | {fmt(r['draw_ratio'], 2)} | {fmt(f['draw_ratio'], 2)} "
              f"| {f['false_culls']} | {fmt(used['p50'], 0)} / {fmt(used['p99'], 0)} | {d['used']} | {ignored} "
              f"| {d['cuts']} ({d['cuts_used']}) | {fmt(d['hidden_by_feed_per_frame'], 1)} | {note} |")
    return bad


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--walk", default="build/examples/rvis-walk", help="the rvis-walk binary")
    p.add_argument("-p", "--pak", default=DEFAULT_PAK, help="the .pk3 holding maps/*.bsp")
    p.add_argument("-j", "--jobs", type=int, default=1, help="maps run at once (default 1)")
    p.add_argument("-e", "--verify-every", type=int, default=1, help="verify every Nth frame")
    p.add_argument("-o", "--out", help="directory for the per-map reports")
    p.add_argument("--maps", help="comma-separated map names (default: every map in the pak)")
    p.add_argument("--no-timing", action="store_true", help="skip the runs without --verify")
    p.add_argument("--reuse", action="store_true", help="take runs already in --out instead of running them")
    p.add_argument("--depth-feed", action="store_true",
                   help="also walk each map with rvis-walk --depth-feed and compare (a second table)")
    p.add_argument("--city-frames", type=int, default=120, help="frames of the scene named city (default 120)")
    p.add_argument("extra", nargs="*", help="arguments for rvis-walk (after --)")
    opts = p.parse_args()
    if not os.access(opts.walk, os.X_OK):
        sys.exit(f"sweep_maps: {opts.walk} is not an executable rvis-walk (see -w)")
    if not os.path.exists(opts.pak) and (not opts.maps or opts.maps != "city"):
        sys.exit(f"sweep_maps: {opts.pak} is missing (Debian package openarena-081-maps)")
    names = opts.maps.split(",") if opts.maps else map_names(opts.pak)
    opts.out = opts.out or tempfile.mkdtemp(prefix="rvis-sweep-")
    os.makedirs(opts.out, exist_ok=True)

    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futures = [pool.submit(sweep_one, opts, n) for n in names]
        for f in concurrent.futures.as_completed(futures):
            row = f.result()
            rows.append(row)
            r = row["report"]
            state = "ok" if row["code"] == 0 else f"exit {row['code']}"
            print(f"sweep_maps: {len(rows)}/{len(names)} {row['map']}: {state}"
                  + (f", draw ratio {r['draw_ratio']:.2f}, false culls {r['false_culls']}" if r else ""),
                  file=sys.stderr, flush=True)
    rows.sort(key=lambda r: r["map"])

    print(f"rvis-walk --verify --verify-every {opts.verify_every} on {len(names)} maps of {opts.pak}"
          + (f" (extra: {' '.join(opts.extra)})" if opts.extra else ""))
    print()
    print("| map | frames | objects | occluders | drawn mean | truly visible mean | draw ratio "
          "| false culls | frame p50 µs | |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    failed, culled = [], []
    tot = {"frames": 0, "verified": 0, "drawn": 0.0, "truly": 0.0, "false_culls": 0}
    ratios, p50s = [], []
    for row in rows:
        r = row["report"]
        if r is None or row["code"] not in (0, 1):
            failed.append(row)
            print(f"| {row['map']} | | | | | | | | | {row['message'] or 'exit ' + str(row['code'])} |")
            continue
        v = r["verify"]["frames"]
        tot["frames"] += r["frames"]
        tot["verified"] += v
        tot["truly"] += (r["truly_visible_mean"] or 0) * v
        tot["drawn"] += (r["draw_ratio"] or 0) * (r["truly_visible_mean"] or 0) * v
        tot["false_culls"] += r["false_culls"]
        if r["draw_ratio"] is not None:
            ratios.append(r["draw_ratio"])
        if row["frame_p50"] is not None:
            p50s.append(row["frame_p50"])
        note = ""
        if r["false_culls"]:
            culled.append(row)
            note = "FALSE CULLS"
        elif row["code"] == 1:
            culled.append(row)
            note = row["message"]
        print(f"| {row['map']} | {r['frames']} | {r['objects']} | {r['occluders']} | {fmt(r['drawn_mean'])} "
              f"| {fmt(r['truly_visible_mean'])} | {fmt(r['draw_ratio'], 2)} | {r['false_culls']} "
              f"| {fmt(row['frame_p50'], 0)} | {note} |")
    print()
    ran = len(rows) - len(failed)
    pooled = tot["drawn"] / tot["truly"] if tot["truly"] else None
    mean_ratio = sum(ratios) / len(ratios) if ratios else None
    p50s.sort()
    median_p50 = p50s[len(p50s) // 2] if p50s else None
    print(f"Totals: {ran} of {len(rows)} maps walked, {tot['frames']} frames ({tot['verified']} verified), "
          f"{tot['false_culls']} false culls on {sum(1 for r in culled if r['report']['false_culls'])} maps; "
          f"draw ratio pooled {fmt(pooled, 2)}, mean of maps {fmt(mean_ratio, 2)}, "
          f"worst {fmt(max(ratios) if ratios else None, 2)}; frame p50 median of maps {fmt(median_p50, 0)} µs, "
          f"worst {fmt(p50s[-1] if p50s else None, 0)} µs")
    for row in failed:
        print(f"Not walked: {row['map']}: {row['message'] or 'exit ' + str(row['code'])}")
    for row in culled:
        f = row["report"].get("first_false_cull")
        if f:
            named = ", ".join(f"{o.get('surface', o.get('building'))} ({o['pixels']} px)"
                              for o in f["occluders"])
            print(f"First false cull on {row['map']}: frame {f['frame']}, object {f['object']}, {f['pixels']} px, "
                  f"culled by {f['culled_by']}, {f['pixels_behind_occluders']} px behind occluders "
                  f"[{named or 'none'}]")
    feed_bad = feed_table(rows) if opts.depth_feed else []
    print(f"Reports: {opts.out}")
    if culled or any(r["feed"] is not None and r["feed"]["false_culls"] for r in feed_bad):
        return 1
    if feed_bad:
        return 2
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
