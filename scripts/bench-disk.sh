#!/usr/bin/env bash
# Runs scripts/bench.sh (arguments passed through) with the bench's PostgreSQL on an ext4 file
# system of its own, mounted without online discard: a loop device over a sparse file under
# /var/tmp, removed when the run ends, however it ends.
#
# Why: a file system mounted with `discard` (this machine's root is) tells the disk about every
# block a deleted file frees before the deleting call returns, so PostgreSQL's `DROP TABLE`
# waits for the disk in proportion to the bytes dropped. Retention drops a whole outbox
# partition; run beside `make bench`, this shows how much of its time is the disk's discard
# (docs/performance-log.md, "Retention"; docs/operations.md, "The database's disk").
#
#   scripts/bench-disk.sh --only history          (make bench-disk)
#
# Needs root and a free loop device; says so and stops otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "bench-disk.sh: needs root (it mounts a loop device)" >&2
  exit 1
fi
size=${QUALIFIER_BENCH_DISK_GB:-40}
work=$(mktemp -d /var/tmp/qualifier-bench-disk.XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
cleanup() {
  # bench.sh has stopped its server by now (its own trap); unmount, then free the image.
  umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
# Sparse: the image takes on the root disk only what the run writes.
truncate -s "${size}G" "$work/image"
mkfs.ext4 -q -F "$work/image"
# ext4's default is `nodiscard`; named here so the point of the run is in the command line.
mount -o loop,nodiscard "$work/image" "$mnt"
chmod 1777 "$mnt"
echo "bench-disk.sh: PostgreSQL's data on $(findmnt -n -o SOURCE,FSTYPE,OPTIONS "$mnt")"
TMPDIR=$mnt scripts/bench.sh "$@"
