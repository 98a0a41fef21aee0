"""Writer process for the crash tests: appends records and prints each acknowledged seq.

Usage: ``python crash_writer.py LOG_PATH FIRST_SEQ``. A seq is printed only after
``append``/``append_batch`` returned, i.e. after fsync: printed means acknowledged.
"""

from __future__ import annotations

import sys

from knowhub.storage import JsonlLog


def main() -> None:
    path, seq = sys.argv[1], int(sys.argv[2])
    with JsonlLog(path) as log:
        while True:
            if seq % 5 == 0:
                batch = [{"seq": seq + k, "pad": "知识" * ((seq + k) % 97)} for k in range(40)]
                log.append_batch(batch)
                acked = range(seq, seq + len(batch))
            else:
                log.append({"seq": seq, "pad": "x" * (seq % 301)})
                acked = range(seq, seq + 1)
            sys.stdout.write("".join(f"{n}\n" for n in acked))
            sys.stdout.flush()
            seq = acked[-1] + 1


if __name__ == "__main__":
    main()
