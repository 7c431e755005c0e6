# realworld: a gevent StreamServer and its client on loopback
# report: gevent servers profiled per connection (pyinstrument issue 84,
#   flask+gunicorn+gevent); no network: 127.0.0.1 and a numeric address,
#   so no name resolution. https://github.com/joerick/pyinstrument/issues/84
# semantics: the server spawns a greenlet per connection that echoes
#   upper-cased lines; a client greenlet sends three lines. All in one
#   thread, all switches through the hub: clean.
# modes: whole manual
# needs: gevent
# quick: yes
# expect: clean
import gevent
import greenreplay
from gevent import socket
from gevent.server import StreamServer


def echo(sock, address):
    f = sock.makefile("rwb")
    for line in f:
        f.write(line.upper())
        f.flush()
    f.close()
    sock.close()


def client(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", port))
    f = s.makefile("rwb")
    got = []
    for word in (b"alpha\n", b"beta\n", b"gamma\n"):
        f.write(word)
        f.flush()
        got.append(f.readline())
    f.close()
    s.close()
    return got


def main():
    greenreplay.start()
    server = StreamServer(("127.0.0.1", 0), echo)
    server.start()
    c = gevent.spawn(client, server.server_port)
    got = c.get(timeout=10)
    server.stop()
    assert got == [b"ALPHA\n", b"BETA\n", b"GAMMA\n"], got
    greenreplay.stop()


main()
