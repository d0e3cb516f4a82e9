#!/usr/bin/env python3
"""What RabbitMQ's CPU per delivery would be if first attempts went several to a message.

Every delivery is one persistent message today, through a quorum queue (crates/bus/src/lib.rs),
and `make perf-check` prints RabbitMQ at about a seventh of the machine's CPU per event. This
measures the broker alone, without the services: DELIVERIES persistent messages of about the
size of an event's envelope and the headers a delivery carries, published to a quorum queue of
this script's own (`qualifier-bench-bundles-<pid>-<n>`, deleted after), consumed and acked one
by one; then the same deliveries bundled N to a message. It reads the broker's CPU from
/proc (the `beam.smp` process, so RabbitMQ must run on this machine) and takes off what the
broker spends idle over the same time. Publishes are not confirmed (the relay confirms a
batch with one wait; a confirm is a frame, not a write): the figures are the broker's work for
the messages and their acks, to compare between the rows, not with `make perf-check`'s.

    scripts/bench-broker-bundles.py [--deliveries 10000] [--bundles 1,10,50] [--url amqp://...]

Needs `pika` (installed with pip when missing).
"""
import argparse
import os
import subprocess
import sys
import time

try:
    import pika
except ImportError:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "pika"], check=True)
    import pika

TICKS = os.sysconf("SC_CLK_TCK")


def broker_pid():
    out = subprocess.run(["pgrep", "-f", "beam.smp"], capture_output=True, text=True).stdout
    if not out.split():
        sys.exit("bench-broker-bundles: no beam.smp process here (RabbitMQ must run locally)")
    return int(out.split()[0])


def cpu_seconds(pid):
    # utime and stime, fields 14 and 15 of /proc/PID/stat (after the command's parentheses).
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def run(url, pid, idle, deliveries, per_message, n):
    queue = f"qualifier-bench-bundles-{os.getpid()}-{n}"
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
    try:
        # The headers a delivery message carries: ten of about this size.
        headers = {f"x-qualifier-h{i}": "0123456789abcdef0123456789abcdef" for i in range(10)}
        props = pika.BasicProperties(
            delivery_mode=2, headers=headers, content_type="application/json"
        )
        body = b"x" * (900 * per_message)
        messages = deliveries // per_message
        c0, t0 = cpu_seconds(pid), time.monotonic()
        for _ in range(messages):
            ch.basic_publish("", queue, body, props)
        got = 0
        for method, _, _ in ch.consume(queue, inactivity_timeout=10):
            if method is None:
                break
            ch.basic_ack(method.delivery_tag)
            got += 1
            if got == messages:
                break
        ch.cancel()
        time.sleep(1.0)  # the acks settled on the broker's side
        c1, t1 = cpu_seconds(pid), time.monotonic()
        if got != messages:
            sys.exit(f"bench-broker-bundles: {got} of {messages} messages came back")
        return ((c1 - c0) - idle * (t1 - t0)) * 1e6 / (messages * per_message)
    finally:
        ch.queue_delete(queue)
        conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--deliveries", type=int, default=10000)
    p.add_argument("--bundles", default="1,10,50")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672/%2f")
    a = p.parse_args()
    pid = broker_pid()
    c0 = cpu_seconds(pid)
    time.sleep(3)
    idle = (cpu_seconds(pid) - c0) / 3
    print(f"broker idle: {idle * 1e3:.1f} ms CPU a second (taken off each row)")
    n = 0
    for r in range(a.rounds):
        for per in [int(x) for x in a.bundles.split(",")]:
            n += 1
            us = run(a.url, pid, idle, a.deliveries, per, n)
            print(f"round {r + 1}: {per:>3} deliveries a message: {us:7.1f} µs broker CPU a delivery")


if __name__ == "__main__":
    main()
