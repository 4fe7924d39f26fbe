#!/usr/bin/env python3
"""Where rvis-walk draws more than a pixel-exact culler would: the objects rvis drew on a
verified frame that the ideal bound drawing each object's box hid (the gap between
`draw_ratio` and `ideal_box_ratio` in the report), sorted by what they are.

    rvis-walk --map oa_dm4 --verify --dump-scene scene.jsonl --dump-visibility vis.jsonl
    tools/walk_excess.py scene.jsonl vis.jsonl

Each such object (per frame) is sorted by
  - facing: "toward" when every triangle faces the eye, "away" when none does, else
    "mixed". A map's triangles are wound clockwise seen from their front (Quake III's
    order, which the walk keeps); --front ccw for a scene wound the other way;
  - edge: "shares" when one of its triangle edges (both end points bit for bit) is an
    edge of another object facing the eye, else "alone". An object facing away that shares
    an edge with one facing the eye is mostly the far side of a solid, behind its near
    faces and touching them along the silhouette, where the two are at the same depth;
  - size: the diagonal of its box, in world units.
Then the draw ratio over the verified frames, and what it would be were the objects that
share such an edge (any facing) not drawn: what hiding a face that touches its hider only
along the silhouette would be worth. Prints the means per verified frame (the report's
drawn_mean is over every frame, so the two agree when every frame is verified) and the
objects most often counted. Movers (the city's vehicles) are sorted by the scene dump's
geometry, frame 0's.
"""
import argparse
import json
import math
import sys
from collections import Counter, defaultdict


def load_scene(path):
    tris, edges = {}, defaultdict(set)
    with open(path) as f:
        head = json.loads(f.readline() or "{}")
        if not isinstance(head, dict) or head.get("format") != "rvis-scene-1":
            sys.exit(f"{path}: not an rvis-walk scene dump")
        for line in f:
            d = json.loads(line)
            t = [tuple(p) for p in d["triangles"]]
            tris[d["id"]] = t
            for k in range(0, len(t) - 2, 3):
                for a, b in ((t[k], t[k + 1]), (t[k + 1], t[k + 2]), (t[k + 2], t[k])):
                    edges[frozenset((a, b))].add(d["id"])
    return tris, edges


def facing(t, eye, sign):
    toward = away = 0
    for k in range(0, len(t) - 2, 3):
        a, b, c = t[k], t[k + 1], t[k + 2]
        u = [b[i] - a[i] for i in range(3)]
        v = [c[i] - a[i] for i in range(3)]
        n = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
        s = sign * sum(n[i] * (eye[i] - a[i]) for i in range(3))
        toward += s > 0
        away += s < 0
    return "toward" if away == 0 and toward else "away" if toward == 0 and away else "mixed"


def size_class(t):
    lo = [min(p[i] for p in t) for i in range(3)]
    hi = [max(p[i] for p in t) for i in range(3)]
    d = math.dist(lo, hi)
    return "<4" if d < 4 else "<16" if d < 16 else "<64" if d < 64 else "<256" if d < 256 else ">=256"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scene", help="--dump-scene output")
    ap.add_argument("visibility", help="--dump-visibility output of a --verify run")
    ap.add_argument("--front", choices=("cw", "ccw"), default="cw",
                    help="winding of a triangle seen from its front (default cw, Quake III)")
    ap.add_argument("--top", type=int, default=10, help="objects to list (default 10)")
    a = ap.parse_args()
    # Clockwise seen from the eye: the normal (b - a) x (c - a) points away from it.
    sign = -1.0 if a.front == "cw" else 1.0
    try:
        tris, edges = load_scene(a.scene)
        report(a, sign, tris, edges)
    except BrokenPipeError:  # the reader went away (| head)
        sys.stderr.close()
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"walk_excess.py: {e.__class__.__name__}: {e} (a scene dump and a visibility "
                 "dump of the same rvis-walk run?)")


def report(a, sign, tris, edges):
    """Reads the visibility dump and prints the sorted means."""
    frames = 0
    sums = Counter()
    kinds, sizes, often = Counter(), Counter(), Counter()
    with open(a.visibility) as f:
        for line in f:
            d = json.loads(line)
            if "ideal_box_visible" not in d:
                continue  # not a verified frame
            frames += 1
            eye = d["eye"]
            drawn, kept = set(d["drawn"]), set(d["ideal_box_visible"])
            sums["drawn"] += len(drawn)
            sums["visible"] += len(d["visible"])
            sums["ideal_box"] += len(kept)
            face = {}

            def face_of(o):
                if o not in face:
                    face[o] = facing(tris[o], eye, sign)
                return face[o]

            for o in drawn - kept:
                t = tris[o]
                near = set()
                for k in range(0, len(t) - 2, 3):
                    for x, y in ((t[k], t[k + 1]), (t[k + 1], t[k + 2]), (t[k + 2], t[k])):
                        near |= edges[frozenset((x, y))]
                near.discard(o)
                shares = any(face_of(q) == "toward" for q in near)
                kinds[(face_of(o), "shares" if shares else "alone")] += 1
                sizes[size_class(t)] += 1
                often[o] += 1
    if not frames:
        sys.exit(f"{a.visibility}: no verified frame (run rvis-walk with --verify)")
    excess = sum(kinds.values())
    print(f"verified frames {frames}: drawn {sums['drawn'] / frames:.2f}, truly visible "
          f"{sums['visible'] / frames:.2f}, ideal box bound {sums['ideal_box'] / frames:.2f}, "
          f"drawn but hidden in that bound {excess / frames:.2f} per frame")
    print("by facing and shared edge (per frame):")
    for (fc, sh), n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {fc:6s} {sh:6s} {n / frames:8.2f}")
    print("by box diagonal (per frame):")
    for k in ("<4", "<16", "<64", "<256", ">=256"):
        if sizes[k]:
            print(f"  {k:6s} {sizes[k] / frames:8.2f}")
    if sums["visible"]:
        sharing = sum(n for (fc, sh), n in kinds.items() if sh == "shares")
        print(f"draw ratio over these frames {sums['drawn'] / sums['visible']:.3f}; without the objects "
              f"that share an edge with a face toward the eye {(sums['drawn'] - sharing) / sums['visible']:.3f}")
    print(f"most often (object: frames): "
          + ", ".join(f"{o}: {n}" for o, n in often.most_common(a.top)))


if __name__ == "__main__":
    main()
