# Continued switches under gevent.pywsgi (tests/integration/continued_adversary.sh):
# a WSGI server and clients in one process, over a local socket, with a
# pool of client greenlets.  The blocking resolver keeps gevent's thread
# pool (and its sys.setprofile(None) after every task) out of it.
# requires: gevent
# continued: none (gevent's hub switches in compiled code, without a c_call of switch, and runs unseen between two greenlets)
import os

os.environ["GEVENT_RESOLVER"] = "block"

import gevent  # noqa: E402
from gevent import socket  # noqa: E402
from gevent.pool import Pool  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402


def app(environ, start_response):
    body = ("hello %s" % environ["PATH_INFO"]).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


server = WSGIServer(("127.0.0.1", 0), app, log=None)
server.start()
port = server.server_port


def client(i):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /r%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i)
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return data.endswith(b"hello /r%d" % i)


pool = Pool(10)
ok = pool.map(client, range(60))
server.stop()
print("ok", sum(ok), "of", len(ok))
