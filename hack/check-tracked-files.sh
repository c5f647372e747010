#!/usr/bin/env bash
# check-tracked-files.sh: fails when git tracks a build output: a file that
# starts like a compiled program (ELF, Mach-O, PE/COFF, a Go archive) or any
# file larger than the limit (bytes; default 1 MiB, twice the largest
# legitimate file, the experimental HTTPRoute CRD at about 0.5 MB).
# Usage: hack/check-tracked-files.sh [limit-bytes]   (run from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-1048576}
bad=0
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue # deleted in the work tree
  size=$(stat -c %s -- "$f")
  if ((size > limit)); then
    echo "tracked file over $limit bytes: $f ($size bytes)" >&2
    bad=1
  fi
  magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
  case $magic in
  7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | 4d5a* | 213c6172)
    echo "tracked compiled binary: $f (magic $magic)" >&2
    bad=1
    ;;
  esac
done < <(git ls-files -z)
if ((bad)); then
  echo "remove build outputs from git (git rm --cached) and ignore them in .gitignore" >&2
  exit 1
fi
echo "tracked files: no compiled binary, none over $limit bytes"
