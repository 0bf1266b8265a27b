#!/usr/bin/env bash
# HTTP/3 and QUIC per request, in memory (no sockets), A B A B: crates/http3 (quiche, HTTP/3),
# quiche's QUIC alone and quinn-proto's QUIC alone (bench/quic-choice, built apart: it is not
# a workspace member). CPU time around each side's calls and Rust allocations per request.
#
#   bench/http3-memory.sh [REQUESTS] [CONNECTIONS] [STREAMS] [ROUNDS]   (defaults 20000 40 10 3)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20000} M=${2:-40} S=${3:-10} ROUNDS=${4:-3}
for v in "$N" "$M" "$S" "$ROUNDS"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "http3-memory.sh: \`$v\` is not a positive number" >&2; exit 2; }
done
cargo build --release -q -p http3 --examples
(cd bench/quic-choice && cargo build --release -q)
for round in $(seq "$ROUNDS"); do
    echo "== round $round"
    target/release/examples/h3_memory "$N" "$M" "$S" 1 | sed -n '3p' | sed 's/^ *1/http3 (quiche, HTTP\/3) /'
    target/release/examples/quic_streams "$N" "$M" "$S" 1 | tail -1 | sed 's/^ *1/quiche QUIC only       /'
    bench/quic-choice/target/release/quic-choice "$N" "$M" "$S" 1 | tail -1 | sed 's/^ *1/quinn-proto QUIC only  /'
done
echo "columns: client us/req, client allocs/req, server us/req, server allocs/req (h3_memory: then datagrams/req)"
