#!/usr/bin/env python3
"""moto's server mode over HTTPS, for the tests of the AWS destinations (SQS, EventBridge, S3).

    moto-https.py <port> <certificate.pem> <key.pem>

Serves every AWS service moto mocks on 127.0.0.1:<port> with the given certificate (the test
receiver's, which the worker under test trusts through QUALIFIER_WEBHOOK_CA_FILE), until it is
killed. `moto_server` itself serves plain HTTP or a certificate of its own making; this is the
same application (moto.server.DomainDispatcherApplication) behind werkzeug's TLS, speaking
HTTP/1.1 so that a client keeps its connection (werkzeug's default, HTTP/1.0, would cost a TLS
handshake per request). Installed by scripts/ensure-test-deps.sh (`moto[server]`).

One change to moto's speed, none to what it answers: moto's SQS asks the time of every
message a queue holds on every call (is it visible, is it delayed), each through datetime
arithmetic that costs ~10 us; a queue a few thousand deep then costs tens of milliseconds a
request, and the SQS benchmark measured moto's clock rather than the worker. The same clock
(milliseconds since the epoch) is read here with time.time().
"""
import sys
import time

import moto.sqs.models as sqs_models

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import WSGIRequestHandler, run_simple


_unix_time_millis = sqs_models.unix_time_millis


def _now_millis(dt=None):
    return time.time() * 1000.0 if dt is None else _unix_time_millis(dt)


def main():
    sqs_models.unix_time_millis = _now_millis
    port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    WSGIRequestHandler.protocol_version = "HTTP/1.1"
    app = DomainDispatcherApplication(create_backend_app)
    run_simple("127.0.0.1", port, app, threaded=True, ssl_context=(cert, key), use_reloader=False)


if __name__ == "__main__":
    main()
