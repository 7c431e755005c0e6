# realworld: gevent.pywsgi serving one request on loopback
# report: pyinstrument issue 84 (flask+gunicorn+gevent profiling) and
#   sentry-python PR 1822 (profiling gevent web workers).
#   https://github.com/getsentry/sentry-python/pull/1822
# semantics: a WSGI app answers a GET from a client greenlet over
#   127.0.0.1; the server's handler greenlet and the client switch through
#   the hub. Starting, the server looks up its own name (SERVER_NAME, by
#   socket.getfqdn), which gevent resolves in its thread pool: from gevent
#   20.12 the worker removes the profiler after the task, a known-benign
#   cause (gevent PR 1722). Right verdict: exit 0 with a note naming
#   gevent's thread pool; before 20.12 the worker is a raw thread no
#   profiler reached.
# modes: whole manual
# needs: gevent
# quick: yes
# expect: clean
# note: thread pool
# expect gevent<20.12: unreached
import gevent
import greenreplay
from gevent import socket
from gevent.pywsgi import WSGIServer


def app(environ, start_response):
    body = ("hello " + environ["PATH_INFO"]).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]


def client(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /world HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


def main():
    greenreplay.start()
    server = WSGIServer(("127.0.0.1", 0), app, log=None, error_log=None)
    server.start()
    data = gevent.spawn(client, server.server_port).get(timeout=10)
    server.stop()
    assert data.endswith(b"hello /world"), data
    greenreplay.stop()


main()
