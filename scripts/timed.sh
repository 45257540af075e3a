#!/bin/sh
# timed.sh FILE NAME CMD... - run CMD, append "NAME SECONDS" to FILE (the phases `make test` prints
# at its end), exit with CMD's status.
f=$1 n=$2
shift 2
s=$(date +%s)
"$@"
rc=$?
mkdir -p "$(dirname "$f")"
echo "$n $(( $(date +%s) - s )) $([ $rc = 0 ] && echo ok || echo "FAILED($rc)")" >> "$f"
exit $rc
