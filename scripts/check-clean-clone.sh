#!/usr/bin/env bash
# Does the README's test command work from a fresh checkout? Clones the committed HEAD into a
# temp directory, runs the README's install command there, then the README's test command on one
# small test file: `npm test` runs its `pretest` (scripts/test-setup.sh, the machine's
# prerequisites) and then jest with the project's own config (environment, global set-up and
# teardown), as on a new developer's machine. One file, not the suite: .ci/run runs the whole
# suite from the CI checkout right after, and twice more would not fit CI's time.
# Bounded: each command has a time limit. Leaves nothing behind (the temp directory is removed).
set -euo pipefail
cd "$(dirname "$0")/.."

# The commands are the README's, word for word: when the README changes them, this fails until
# the two agree again.
INSTALL='npm install'
TEST='npm test'
SMALL_FILE=test/unit/smoke.test.ts
section=$(awk '/^## Tests$/ { on = 1; next } /^## / { on = 0 } on' README.md)
for command in "$INSTALL" "$TEST"; do
  grep -qxF "$command" <<<"$section" || grep -qE "^${command}( |$)" <<<"$section" || {
    echo "check-clean-clone: the README's Tests section no longer has the line '$command'; update scripts/check-clean-clone.sh to match it" >&2
    exit 1
  }
done

head=$(git rev-parse HEAD)
work=$(mktemp -d "${TMPDIR:-/tmp}/keyward-clean-clone-XXXXXX")
trap 'rm -rf "$work"' EXIT
git clone --quiet --no-checkout "$PWD" "$work/keyward"
git -C "$work/keyward" checkout --quiet --detach "$head"
cd "$work/keyward"
echo "check-clean-clone: $head in $work/keyward"

# npm's cache makes a repeated install fast; the registry is asked only for what it lacks.
echo "check-clean-clone: $INSTALL"
timeout 900 $INSTALL --no-audit --no-fund --prefer-offline
echo "check-clean-clone: $TEST -- $SMALL_FILE"
CI=true timeout 600 $TEST -- "$SMALL_FILE"
echo "check-clean-clone: passed"
