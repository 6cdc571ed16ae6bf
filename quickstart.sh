#!/usr/bin/env bash
# ik_node quick start: sets up a virtual environment with everything (ROS 2 Jazzy wheels from
# PyPI included) and runs the main job or the test suite. Idempotent: a second run reuses the
# environment and only reinstalls when setup.py, setup.cfg, package.xml or this script changed.
#
#   ./quickstart.sh demo   the node on the default robot, fed scripted targets over ROS 2 topics
#   ./quickstart.sh test   lint and the whole test suite (the compiled kernels serve)
#   ./quickstart.sh test-python   the core tests again on the pure-Python path
#                          (IK_NODE_NO_NUMBA=1), slow ones left out
#   ./quickstart.sh test-humble   the core tests on ROS 2 Humble's Python 3.10, numpy 1.21 and
#                          Ubuntu 22.04's numba 0.55 (own venv, .venv-humble), slow ones left out
#   ./quickstart.sh env    only set up; prints the venv's python
#
# Environment: IK_NODE_VENV (default .venv beside this script), PYTHON (interpreter to use).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
venv="${IK_NODE_VENV:-$here/.venv}"

pick_python() {
  # The ROS 2 Jazzy wheels exist for CPython 3.10 to 3.12.
  local candidates=("${PYTHON:-}" python3.12 python3.11 python3.10 python3)
  for py in "${candidates[@]}"; do
    [ -n "$py" ] || continue
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 12) else 1)' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "quickstart: needs Python 3.10, 3.11 or 3.12 (the ROS 2 Jazzy wheels exist for those)" >&2
  return 1
}

setup_env() {
  if [ ! -x "$venv/bin/python" ]; then
    local py; py="$(pick_python)"
    echo "quickstart: creating $venv with $py" >&2
    "$py" -m venv "$venv"
  fi
  local stamp; stamp="$(cat setup.py setup.cfg package.xml quickstart.sh | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$venv/.ik_node_stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "quickstart: installing ik_node and its dependencies into $venv (first run: a few minutes)" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check 'setuptools<80' wheel
    # numba (the compiled kernels) comes with ik_node's install requirements; the cache of
    # compiled kernels is warmed right after, so the first node start loads it.
    # --use-pep517: an editable wheel, so ik_node and ik-solve land in the venv's bin/ (the
    # legacy `setup.py develop` would follow setup.cfg's colcon layout into lib/ik_node).
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --use-pep517 \
      -e ".[ros,test,demo,collision,scale]"
    # An editable install leaves the sources uncompiled: byte-compile them now, not at the
    # node's first start (a pip or colcon install does it itself).
    "$venv/bin/python" -m compileall -q ik_node || true
    "$venv/bin/python" -m ik_node.kernels warm || true
    echo "$stamp" > "$venv/.ik_node_stamp"
  fi
}

cmd="${1:-demo}"
[ $# -gt 0 ] && shift
case "$cmd" in
  env)
    setup_env; echo "$venv/bin/python" ;;
  demo)
    setup_env; exec "$venv/bin/python" demo/main_job.py "$@" ;;
  test)
    setup_env
    "$venv/bin/python" -m ruff check .
    exec "$venv/bin/python" -m pytest -q -p no:cacheprovider test "$@" ;;
  test-python)
    setup_env
    IK_NODE_NO_NUMBA=1 exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not slow" \
      test/core "$@" ;;
  test-humble)
    # Humble's numpy 1.21 has wheels for Python 3.10 only; no ROS wheels here (the core tests).
    hv="${IK_NODE_HUMBLE_VENV:-$here/.venv-humble}"
    if [ ! -x "$hv/bin/python" ]; then
      py=""
      for c in "${PYTHON310:-}" python3.10; do
        if [ -n "$c" ] && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then
          py="$c"; break
        fi
      done
      if [ -z "$py" ] && command -v pyenv >/dev/null 2>&1; then  # pyenv installed, 3.10 not selected
        v="$(pyenv versions --bare 2>/dev/null | grep -E '^3\.10\.[0-9]+$' | tail -1)"
        [ -n "$v" ] && py="$(pyenv root)/versions/$v/bin/python3.10"
      fi
      if [ -z "$py" ]; then
        echo "quickstart: test-humble needs Python 3.10 (python3.10 on PATH, or PYTHON310=...)" >&2
        [ "${IK_NODE_HUMBLE_OPTIONAL:-0}" = 1 ] && { echo "quickstart: test-humble skipped" >&2; exit 0; }
        exit 1
      fi
      "$py" -m venv "$hv"
    fi
    stamp="$(cat setup.py setup.cfg quickstart.sh | sha256sum | cut -d' ' -f1)"
    if [ "$(cat "$hv/.ik_node_stamp" 2>/dev/null)" != "$stamp" ]; then
      "$hv/bin/python" -m pip install -q --disable-pip-version-check 'setuptools<80' wheel
      "$hv/bin/python" -m pip install -q --disable-pip-version-check --use-pep517 -e ".[collision]" \
        "numpy==1.21.6" "numba==0.55.2" "scipy<1.11" pytest hypothesis psutil
      echo "$stamp" > "$hv/.ik_node_stamp"
    fi
    exec "$hv/bin/python" -m pytest -q -p no:cacheprovider -m "not slow" test/core "$@" ;;
  *)
    echo "usage: ./quickstart.sh [demo|test|test-python|test-humble|env] [args...]" >&2; exit 2 ;;
esac
