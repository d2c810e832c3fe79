#!/usr/bin/env python3
"""Empty files named as `pushgate bench dispatch`'s device tokens, so that a static HTTP/2 sink
(nghttpd) answers each of them with 200: token i is "ab" 27 times, i as 8 hex digits, then "01".

    scripts/bench-tokens.py FOLDER COUNT    # tokens 0..<max(COUNT, 2000) (the bench's warm-up)
"""
import os
import sys

folder, count = sys.argv[1], max(int(sys.argv[2]), 2000)
os.makedirs(folder, exist_ok=True)
for i in range(count):
    open(os.path.join(folder, "ab" * 27 + "%08x" % i + "01"), "w").close()
