#!/usr/bin/env bash
# RabbitMQ nodes of our own, beside (never instead of) the default node on 5672.
#
#   rabbitmq.sh up DIR BASE N [CERTDIR]  start N nodes named qlf<BASE>-<i>@localhost, AMQP on
#                                        BASE+i, TLS on BASE+10+i when CERTDIR (certs.sh) is
#                                        given, Erlang distribution on BASE+20+i, and join them
#                                        into one cluster; writes DIR/amqp_urls (comma-separated)
#   rabbitmq.sh pid DIR i                the OS pid of node i (for kill -9)
#   rabbitmq.sh start DIR i              start node i again (after a kill -9)
#   rabbitmq.sh leader DIR QUEUE         the node (i) leading a quorum queue
#   rabbitmq.sh node-of DIR NAME         the node (i) holding the connection whose name is NAME
#   rabbitmq.sh status DIR               the queues as a live node sees them (diagnostics)
#   rabbitmq.sh down DIR                 stop every node, remove DIR
#
# The nodes run as the rabbitmq user with its Erlang cookie (so `rabbitmqctl -n` works as root),
# with their own data, logs, configuration and no plugins.
set -euo pipefail
cmd=${1:?usage: rabbitmq.sh up|pid|start|leader|node-of|down DIR ...}
dir=${2:?DIR}

node_name() { echo "qlf$(cat "$dir/base")-$1@localhost"; }
ctl() { local i=$1; shift; rabbitmqctl -q -n "$(node_name "$i")" "$@"; }
nodes() { cat "$dir/count"; }
launch() {
  local i=$1 n="$dir/node$1" base
  base=$(cat "$dir/base")
  rm -f "$n/pid"
  runuser -u rabbitmq -- env -i PATH="$PATH" HOME=/var/lib/rabbitmq LANG=C.UTF-8 \
    RABBITMQ_NODENAME="$(node_name "$i")" \
    RABBITMQ_CONF_ENV_FILE="$n/rabbitmq-env.conf" \
    RABBITMQ_CONFIG_FILE="$n/rabbitmq.conf" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$n/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$n/mnesia" RABBITMQ_LOG_BASE="$n/log" \
    RABBITMQ_PID_FILE="$n/pid" RABBITMQ_DIST_PORT=$((base + 20 + i)) \
    ERL_EPMD_ADDRESS=127.0.0.1 \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
    setsid /usr/lib/rabbitmq/bin/rabbitmq-server >> "$n/log/stdout" 2>&1 < /dev/null &
}
await_node() {
  local i=$1
  for _ in $(seq 120); do
    [[ -s $dir/node$i/pid ]] && ctl "$i" await_startup >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "rabbitmq.sh: node $i did not start" >&2; tail -20 "$dir/node$i/log/stdout" >&2; return 1
}

case $cmd in
up)
  base=${3:?BASE}; count=${4:?N}; certs=${5:-}
  for ((i = 1; i <= count; i++)); do
    for p in $((base + i)) $((base + 20 + i)); do
      if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
        echo "rabbitmq.sh: port $p is in use" >&2; exit 1
      fi
    done
  done
  mkdir -p "$dir"; chmod 755 "$dir"
  echo "$base" > "$dir/base"; echo "$count" > "$dir/count"
  urls=()
  for ((i = 1; i <= count; i++)); do
    n="$dir/node$i"; mkdir -p "$n/mnesia" "$n/log"
    echo '[].' > "$n/enabled_plugins"
    : > "$n/rabbitmq-env.conf"
    {
      echo "listeners.tcp.1 = 127.0.0.1:$((base + i))"
      echo "loopback_users = none"
      # A test's own cluster on one small machine: never block publishers on disk space.
      echo "disk_free_limit.absolute = 50MB"
      if [[ -n $certs ]]; then
        cp "$certs/server.pem" "$certs/ca.pem" "$certs/server.key" "$n/"
        echo "listeners.ssl.1 = 127.0.0.1:$((base + 10 + i))"
        echo "ssl_options.cacertfile = $n/ca.pem"
        echo "ssl_options.certfile = $n/server.pem"
        echo "ssl_options.keyfile = $n/server.key"
        echo "ssl_options.verify = verify_none"
        echo "ssl_options.fail_if_no_peer_cert = false"
      fi
    } > "$n/rabbitmq.conf"
    chown -R rabbitmq:rabbitmq "$n"
    launch "$i"
    if [[ -n $certs ]]; then
      urls+=("amqps://guest:guest@localhost:$((base + 10 + i))/%2f")
    else
      urls+=("amqp://guest:guest@127.0.0.1:$((base + i))/%2f")
    fi
  done
  for ((i = 1; i <= count; i++)); do await_node "$i"; done
  for ((i = 2; i <= count; i++)); do
    {
      ctl "$i" stop_app && ctl "$i" join_cluster "$(node_name 1)" && ctl "$i" start_app
    } >> "$dir/node$i/log/join" 2>&1 || { cat "$dir/node$i/log/join" >&2; exit 1; }
  done
  (IFS=,; echo "${urls[*]}") > "$dir/amqp_urls"
  ;;
pid)
  cat "$dir/node${3:?i}/pid"
  ;;
start)
  # A node that was killed comes back with its data and rejoins its cluster by itself.
  launch "${3:?i}"
  await_node "$3"
  ;;
leader)
  queue=${3:?QUEUE}
  for ((i = 1; i <= $(nodes); i++)); do
    leader=$(ctl "$i" list_queues name leader 2>/dev/null | awk -v q="$queue" '$1 == q {print $2}') || continue
    [[ -n $leader ]] && { echo "${leader%@*}" | sed 's/.*-//'; exit 0; }
  done
  exit 1
  ;;
node-of)
  name=${3:?NAME}
  for ((i = 1; i <= $(nodes); i++)); do
    # The connection's pid names the node it lives on: <qlfBASE-i@localhost.….>
    line=$(ctl "$i" list_connections pid client_properties 2>/dev/null | grep -F "$name" | head -1) || continue
    [[ -n $line ]] && { echo "$line" | sed -E 's/^<qlf[0-9]+-([0-9]+)@.*/\1/'; exit 0; }
  done
  exit 1
  ;;
status)
  # For a failed run: each live node's view of the queues and of the cluster.
  for ((i = 1; i <= $(nodes); i++)); do
    ctl "$i" list_queues name leader online messages messages_unacknowledged 2>/dev/null && break
  done
  ;;
down)
  [[ -d $dir ]] || exit 0
  for ((i = 1; i <= $(nodes); i++)); do
    pidfile="$dir/node$i/pid"
    if [[ -s $pidfile ]]; then
      pid=$(cat "$pidfile")
      ctl "$i" stop >/dev/null 2>&1 || true
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$dir"
  ;;
*)
  echo "rabbitmq.sh: unknown command $cmd" >&2; exit 2 ;;
esac
