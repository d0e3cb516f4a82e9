#!/usr/bin/env python3
"""moto's server mode over HTTPS, for the tests of the AWS destinations (SQS, EventBridge, S3).

    moto-https.py <port> <certificate.pem> <key.pem>

Serves every AWS service moto mocks on 127.0.0.1:<port> with the given certificate (the test
receiver's, which the worker under test trusts through QUALIFIER_WEBHOOK_CA_FILE), until it is
killed. `moto_server` itself serves plain HTTP or a certificate of its own making; this is the
same application (moto.server.DomainDispatcherApplication) behind werkzeug's TLS. Installed by
scripts/ensure-test-deps.sh (`moto[server]`).
"""
import sys

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


def main():
    port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    app = DomainDispatcherApplication(create_backend_app)
    run_simple("127.0.0.1", port, app, threaded=True, ssl_context=(cert, key), use_reloader=False)


if __name__ == "__main__":
    main()
