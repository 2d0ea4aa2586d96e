#!/usr/bin/env bash
# Clean-environment smoke: the package as a user gets it from `pip install`, each face alone.
#
# Builds the wheel once, then for the base install and for each extra installed alone makes a
# throwaway venv (never the dev venv, where every optional dependency happens to be present)
# and runs the checks a new user meets first: --help, --version, usage errors (one line, exit
# 2, never a traceback), the README's first example, and one real command per face. Every
# check is reported, not only the first failure; the exit status is 1 if any failed.
#
#   bash .ci/smoke.sh                 # every flavour, two at a time
#   bash .ci/smoke.sh base server     # only these
#   SMOKE_JOBS=1 SMOKE_KEEP=1 bash .ci/smoke.sh   # one at a time, keep the venvs and logs
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${SMOKE_JOBS:-2}
ALL_FLAVOURS=(mem0 langgraph graphiti langmem bench server mcp postgres paraphrase-minilm wordllama client base)  # slowest installs first
if (($#)); then FLAVOURS=("$@"); else FLAVOURS=("${ALL_FLAVOURS[@]}"); fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/branchmem-smoke.XXXXXX")
if [[ -z "${SMOKE_KEEP:-}" ]]; then trap 'rm -rf "$WORK"' EXIT; fi
mkdir -p "$WORK/dist" "$WORK/results" "$WORK/logs" "$WORK/snippets"
started=$SECONDS

echo "smoke: building the wheel"
if ! python3 -m pip wheel --no-deps --quiet --wheel-dir "$WORK/dist" . >"$WORK/logs/wheel.log" 2>&1; then
  grep -v "is ignored: it is neither" "$WORK/logs/wheel.log" | tail -20
  echo "smoke: FAILED to build the wheel"
  exit 1
fi
WHEEL=$(ls "$WORK"/dist/branchmem-*.whl)
# One pip, the host's, installs into every venv (pip >= 22.3 has --python): bootstrapping pip
# into each of the eight venvs cost ~5 s of CPU apiece. An older host pip: each venv its own.
if python3 -m pip --python "$(command -v python3)" --version >/dev/null 2>&1; then
  VENV_ARGS=(--without-pip)
  pip_in() { local py=$1; shift; python3 -m pip --python "$py" "$@"; }
else
  VENV_ARGS=()
  pip_in() { local py=$1; shift; "$py" -m pip "$@"; }
fi
VERSION=$(basename "$WHEEL" | cut -d- -f2)
echo "smoke: $(basename "$WHEEL"), flavours: ${FLAVOURS[*]} ($JOBS at a time)"

# -- Python snippets the checks run (written once, run by each venv's interpreter) ----------
# Named smoke_*: a script's folder comes first on sys.path, so "mem0.py" would shadow mem0.
# The README's first ```python block, verbatim: what a reader pastes first.
awk '/^```python$/ {inside=1; next} inside && /^```$/ {exit} inside {print}' README.md \
  >"$WORK/snippets/smoke_readme.py"

cat >"$WORK/snippets/smoke_client.py" <<'EOF'
from branchmem import Client
client = Client("http://127.0.0.1:9", api_key="bm_smoke_secret")
print("constructed", type(client).__name__)
EOF

cat >"$WORK/snippets/smoke_client_missing.py" <<'EOF'
# Without httpx the client must raise a branchmem error naming the extra, not a raw import error.
from branchmem.errors import BranchmemError
try:
    from branchmem import Client
    Client("http://127.0.0.1:9", api_key="bm_smoke_secret")
except BranchmemError as error:
    print(f"{type(error).__name__}: {error}")
else:
    print("Client constructed without httpx")
EOF

# An embedder from its extra alone: weights from the wheel (and, for the recommended one, the
# vocabulary from branchmem's own wheel), no download, blended. argv[1]: the class.
cat >"$WORK/snippets/smoke_embedder.py" <<'EOF'
import os
import sys
from branchmem import Memory
from branchmem.search import embedding
os.environ["HF_HUB_OFFLINE"] = "1"
mem = Memory(embedder=getattr(embedding, sys.argv[1])())
mem.add_event("u1", content="I'm moving to Hangzhou next month")
mem.add_record("f1", sources=["u1"], content="user is relocating to Hangzhou")
mem.add_event("u2", "u1", content="I also like green tea")
mem.add_record("f2", sources=["u2"], content="likes green tea")
hits = mem.search("where will the user live?", "u2", k=2)
print("best", hits[0].record.id, hits[0].why)
EOF

cat >"$WORK/snippets/smoke_embedder_missing.py" <<'EOF'
import sys
from branchmem.search import embedding
try:
    getattr(embedding, sys.argv[1])()
except embedding.EmbedderUnavailable as error:
    print(error)
EOF

cat >"$WORK/snippets/smoke_postgres.py" <<'EOF'
import psycopg
from branchmem.store.postgres import PostgresStore
print("PostgresStore", PostgresStore.__name__, "psycopg", psycopg.__version__)
EOF

cat >"$WORK/snippets/smoke_langgraph.py" <<'EOF'
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore
from langgraph.checkpoint.memory import InMemorySaver
from branchmem import Memory
memory = Memory()
saver = BranchCheckpointer(InMemorySaver(), memory)
print("langgraph faces:", type(saver).__name__, BranchStore.__name__)
EOF

cat >"$WORK/snippets/smoke_mem0.py" <<'EOF'
import mem0
from branchmem.integrations.mem0 import BranchMem0
from branchmem.integrations.mem0.offline import offline_memory
print("mem0 faces:", BranchMem0.__name__, offline_memory.__name__, mem0.__name__)
EOF

cat >"$WORK/snippets/smoke_mcp_session.py" <<'EOF'
# An agent host's first minute: start `branchmem mcp`, list the tools, remember, recall.
import sys
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main() -> None:
    params = StdioServerParameters(
        command=sys.argv[1], args=["mcp", "--db", sys.argv[2], "--namespace", "smoke"]
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        started = await session.initialize()
        print("server", started.server_info.name, started.server_info.version)
        print("tools", sorted(t.name for t in (await session.list_tools()).tools))
        await session.call_tool(
            "remember", {"content": "moving to Chengdu", "key": "city", "message": "I'm moving"}
        )
        recalled = await session.call_tool("recall", {"query": "moving"})
        print("recall", recalled.content[0].text)

anyio.run(main)
EOF

cat >"$WORK/snippets/smoke_healthz.py" <<'EOF'
# Poll the service until /healthz answers (or give up), then read /docs and its assets.
import json, re, sys, time, urllib.request
base = sys.argv[1]
deadline = time.monotonic() + 60
while True:
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
            print("healthz", json.load(response))
            break
    except OSError:
        if time.monotonic() > deadline:
            raise SystemExit("healthz: no answer within 60 s")
        time.sleep(0.3)
with urllib.request.urlopen(base + "/docs", timeout=5) as response:
    page = response.read().decode()
assets = re.findall(r'(?:src|href)=["\']([^"\']+)["\']', page)
remote = [a for a in assets if re.match(r"(?i)(https?:)?//", a)]
if remote:
    raise SystemExit(f"/docs loads assets from the network: {remote}")
for asset in assets:
    with urllib.request.urlopen(base + asset, timeout=5) as r:
        print("asset", asset, r.status, len(r.read()))
EOF

cat >"$WORK/snippets/smoke_free_port.py" <<'EOF'
import socket
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
EOF

# -- one flavour ---------------------------------------------------------------------------
# Results: one line per check, "PASS|FAIL <tab> flavour <tab> check <tab> detail".
smoke() {
  local flavour=$1 n=0 venv="$WORK/venv-$1" data="$WORK/data-$1"
  local results="$WORK/results/$flavour" log="$WORK/logs/$flavour"
  local PY="$venv/bin/python" BIN="$venv/bin" OUT=""
  mkdir -p "$data" "$log"
  : >"$results"

  record() { printf '%s\t%s\t%s\t%s\n' "$1" "$flavour" "$2" "${3:-}" >>"$results"; }

  # check NAME WANT CMD...: run CMD (in $data), want exit status WANT ("any", "nonzero" or a
  # number), never a Traceback. OUT names the captured stdout+stderr for the expect/reject calls after it.
  check() {
    local name=$1 want=$2 rc
    shift 2
    n=$((n + 1))
    OUT="$log/$n.out"
    (cd "$data" && timeout 300 "$@") >"$OUT" 2>&1 </dev/null
    rc=$?
    if grep -q "Traceback" "$OUT"; then
      record FAIL "$name" "printed a Traceback (exit $rc): $(grep -m1 -E '^[A-Za-z_.]+(Error|Exception|Exit)' "$OUT" | cut -c1-160)"
    elif [[ $want == nonzero && $rc == 0 ]] || [[ $want != any && $want != nonzero && $rc != "$want" ]]; then
      record FAIL "$name" "exit $rc, wanted $want: $(grep -v '^\s*$' "$OUT" | head -2 | tr '\n' ' ' | cut -c1-200)"
    else
      record PASS "$name"
    fi
  }
  # expect / reject NAME TEXT: the last check's output contains / lacks TEXT (fixed string).
  expect() {
    if grep -qF -- "$2" "$OUT"; then record PASS "$1"; else
      record FAIL "$1" "output lacks '$2': $(grep -v '^\s*$' "$OUT" | head -2 | tr '\n' ' ' | cut -c1-200)"
    fi
  }
  reject() {
    if grep -qF -- "$2" "$OUT"; then record FAIL "$1" "output has '$2'"; else record PASS "$1"; fi
  }

  local t0=$SECONDS spec="$WHEEL"
  [[ $flavour != base ]] && spec="$WHEEL[$flavour]"
  if ! python3 -m venv "${VENV_ARGS[@]}" "$venv" >"$log/venv.log" 2>&1 ||
    ! pip_in "$PY" install --quiet --no-compile --disable-pip-version-check "$spec" >"$log/install.log" 2>&1; then
    record FAIL "install $flavour" "$(grep -v 'is ignored: it is neither' "$log"/install.log "$log"/venv.log 2>/dev/null | tail -3 | tr '\n' ' ' | cut -c1-300)"
    return
  fi
  record PASS "install ($((SECONDS - t0)) s)"
  pip_in "$PY" list --format=freeze --disable-pip-version-check >"$log/installed.txt" 2>/dev/null
  t0=$SECONDS

  # -- every flavour: the entry points and the mistakes a new user makes first ------------
  check "branchmem --help" 0 "$BIN/branchmem" --help
  expect "branchmem --help lists serve" "serve"
  check "branchmem --version" 0 "$BIN/branchmem" --version
  expect "branchmem --version says $VERSION" "$VERSION"
  check "branchmem (no command)" any "$BIN/branchmem"
  check "python -c branchmem.__version__" 0 "$PY" -c "import branchmem; print(branchmem.__version__)"
  expect "branchmem.__version__ is $VERSION" "$VERSION"
  check "branchbench --help" 0 "$BIN/branchbench" --help
  check "usage error: branchmem visible (no args)" 2 "$BIN/branchmem" visible
  check "usage error: branchmem context x --budget abc" 2 "$BIN/branchmem" context x --budget abc
  check "usage error: branchmem no-such-command" 2 "$BIN/branchmem" no-such-command
  check "usage error: branchbench no-such-command" 2 "$BIN/branchbench" no-such-command
  check "README's first example" 0 "$PY" "$WORK/snippets/smoke_readme.py"

  # -- one command per face the flavour enables ------------------------------------------
  case $flavour in
    base)
      check "branchmem demo" 0 "$BIN/branchmem" demo
      # commands named after the API (add-event) or grouped (events add): whichever exists
      local bm="$BIN/branchmem" db="$data/mem.db"
      if "$bm" add-event --help >/dev/null 2>&1; then
        check "add-event u1" 0 "$bm" add-event u1 --content "I need help planning a move" --db "$db"
        check "add-event u2 below u1" 0 "$bm" add-event u2 u1 --content "I'm moving to Chengdu" --db "$db"
        check "add-record f1 from u2" 0 "$bm" add-record f1 --source u2 --content "moving to Chengdu" --key city --db "$db"
      else
        check "events add u1" 0 "$bm" events add u1 --content "I need help planning a move" --db "$db"
        check "events add u2 below u1" 0 "$bm" events add u2 --parent u1 --content "I'm moving to Chengdu" --db "$db"
        check "records add f1 from u2" 0 "$bm" records add f1 --source u2 --content "moving to Chengdu" --key city --db "$db"
      fi
      check "visible at u2" 0 "$bm" visible u2 --db "$db"
      expect "visible at u2 shows f1" "moving to Chengdu"
      check "visible on a missing store fails" nonzero "$bm" visible u1 --db "$data/typo.db"
      if [[ -e "$data/typo.db" ]]; then record FAIL "a read on a missing store does not create it" "typo.db was created"; else record PASS "a read on a missing store does not create it"; fi
      check "serve without [server]" nonzero "$BIN/branchmem" serve --db "$data/mem.db"
      expect "serve names the extra" 'pip install "branchmem[server]"'
      check "mcp without [mcp]" nonzero "$BIN/branchmem" mcp --db "$data/mem.db"
      expect "mcp names the extra" 'pip install "branchmem[mcp]"'
      check "Client without [client]" 0 "$PY" "$WORK/snippets/smoke_client_missing.py"
      expect "Client names the extra" 'pip install "branchmem[client]"'
      check "WordLlamaEmbedder without [wordllama]" 0 "$PY" "$WORK/snippets/smoke_embedder_missing.py" WordLlamaEmbedder
      expect "WordLlamaEmbedder names the extra" "pip install 'branchmem[wordllama]'"
      check "ParaphraseMiniLMEmbedder without [paraphrase-minilm]" 0 "$PY" "$WORK/snippets/smoke_embedder_missing.py" ParaphraseMiniLMEmbedder
      expect "ParaphraseMiniLMEmbedder names the extra" "pip install 'branchmem[paraphrase-minilm]'"
      check "branchbench run without [bench]" 0 "$BIN/branchbench" run --split test --out "$data/bench"
      expect "branchbench prints its table" "branchmem"
      expect "branchbench table has the leak column" "leak"
      OUT="$log/installed.txt"
      for heavy in fastapi httpx psycopg uvicorn starlette mcp matplotlib; do
        if grep -qi "^$heavy==" "$OUT"; then record FAIL "base install does not pull $heavy" "$(grep -i "^$heavy==" "$OUT")"; else record PASS "base install does not pull $heavy"; fi
      done
      ;;
    client)
      check "Client constructs" 0 "$PY" "$WORK/snippets/smoke_client.py"
      expect "Client constructs (printed)" "constructed Client"
      OUT="$log/installed.txt"
      for heavy in fastapi uvicorn psycopg; do
        if grep -qi "^$heavy==" "$OUT"; then record FAIL "[client] does not pull $heavy" "$(grep -i "^$heavy==" "$OUT")"; else record PASS "[client] does not pull $heavy"; fi
      done
      ;;
    server)
      local port pid
      port=$("$PY" "$WORK/snippets/smoke_free_port.py")
      (cd "$data" && exec "$BIN/branchmem" serve --db "$data/served.db" --create --host 127.0.0.1 --port "$port" --log-level warning) \
        >"$log/serve.out" 2>&1 </dev/null &
      pid=$!
      check "serve: /healthz answers, /docs is offline" 0 "$PY" "$WORK/snippets/smoke_healthz.py" "http://127.0.0.1:$port"
      expect "healthz says ok" "'status': 'ok'"
      kill "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      OUT="$log/serve.out"
      reject "serve printed no Traceback" "Traceback"
      expect "serve prints the explorer link" "/ui#"
      ;;
    mcp)
      check "branchmem mcp --help" 0 "$BIN/branchmem" mcp --help
      check "mcp: initialize, remember, recall over stdio" 0 "$PY" "$WORK/snippets/smoke_mcp_session.py" "$BIN/branchmem" "$data/agent.db"
      expect "mcp reports version $VERSION" "server branchmem $VERSION"
      expect "mcp recall finds the fact" "moving to Chengdu"
      ;;
    wordllama | paraphrase-minilm)
      local class=WordLlamaEmbedder
      [[ $flavour == paraphrase-minilm ]] && class=ParaphraseMiniLMEmbedder
      check "search blends $class offline" 0 "$PY" "$WORK/snippets/smoke_embedder.py" "$class"
      expect "the move ranks first" "best f1"
      OUT="$log/installed.txt"
      if grep -qi "^torch==" "$OUT"; then record FAIL "[$flavour] does not pull torch" "$(grep -i "^torch==" "$OUT")"; else record PASS "[$flavour] does not pull torch"; fi
      ;;
    postgres)
      check "import the PostgreSQL store" 0 "$PY" "$WORK/snippets/smoke_postgres.py"
      ;;
    bench)
      check "branchbench run --split test" 0 "$BIN/branchbench" run --split test --out "$data/bench"
      expect "branchbench prints its table" "branchmem"
      expect "branchbench wrote the chart" "leak_by_operation.png"
      ;;
    langgraph)
      check "import the LangGraph integration" 0 "$PY" "$WORK/snippets/smoke_langgraph.py"
      ;;
    mem0)
      check "import the Mem0 integration" 0 "$PY" "$WORK/snippets/smoke_mem0.py"
      ;;
    graphiti)
      check "branchbench runs the graphiti row offline" 0 "$BIN/branchbench" run --split test \
        --out "$data/graphiti" --systems graphiti --limit 1 --pipeline one_message \
        --read-policy path --extractor oracle --runs 1
      expect "the graphiti row is in the table" "graphiti"
      ;;
    langmem)
      check "branchbench runs the langmem row offline" 0 "$BIN/branchbench" run --split test \
        --out "$data/langmem" --systems langmem --limit 1 --pipeline one_message \
        --read-policy path --extractor oracle --runs 1
      expect "the langmem row is in the table" "langmem"
      ;;
  esac
  record PASS "checks ($((SECONDS - t0)) s)"
  if [[ -n "${SMOKE_KEEP:-}" ]]; then :; else rm -rf "$venv"; fi
}

for flavour in "${FLAVOURS[@]}"; do
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
  echo "smoke: $flavour ..."
  smoke "$flavour" &
done
wait

# -- report --------------------------------------------------------------------------------
failed=0 passed=0
for flavour in "${FLAVOURS[@]}"; do
  file="$WORK/results/$flavour"
  [[ -s $file ]] || { echo "FAIL $flavour: no results"; failed=$((failed + 1)); continue; }
  p=$(grep -c '^PASS' "$file") f=$(grep -c '^FAIL' "$file")
  passed=$((passed + p)) failed=$((failed + f))
  printf '%-10s %3d passed %3d failed   %s\n' "$flavour" "$p" "$f" \
    "$(grep -oE '(install|checks) \([0-9]+ s\)' "$file" | tr '\n' ' ')"
done
if ((failed)); then
  echo
  cat "$WORK"/results/* | awk -F'\t' '$1 == "FAIL" {printf "FAIL [%s] %s: %s\n", $2, $3, $4}'
fi
echo
[[ -n "${SMOKE_KEEP:-}" ]] && echo "smoke: logs kept in $WORK"
echo "smoke: took $((SECONDS - started)) s"
echo "smoke: $passed passed, $failed failed"
((failed == 0))
