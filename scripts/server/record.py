"""A recording proxy: listens on 127.0.0.1:PORT, passes every request on to UPSTREAM (a server's root
address, http://127.0.0.1:PORT) and its answer back as it comes, and writes each POST's path, body
and API headers (anthropic-beta, anthropic-version) as one JSON line to FILE; the answers are not
kept. `scripts/bench agents` records an agent's session through it and replays the requests later.

Usage: python record.py PORT UPSTREAM FILE   (PORT 0: any free port; prints the address it listens on)
"""

import http.client
import http.server
import json
import sys
import threading
import urllib.parse

port, upstream, path = int(sys.argv[1]), urllib.parse.urlsplit(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
# Headers that describe one hop, not the request: not passed on.
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding"}
KEPT = ("anthropic-beta", "anthropic-version")


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def forward(self, method):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if method == "POST":
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            line = {"path": self.path, "headers": {k: self.headers[k] for k in KEPT if k in self.headers},
                    "body": parsed}
            with lock, open(path, "a") as f:
                f.write(json.dumps(line) + "\n")
        c = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=1800)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        c.request(method, self.path, body if method == "POST" else None, headers)
        r = c.getresponse()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # Passed on as it comes (an agent gives up on a stream that stays silent).
        while True:
            data = r.read1(65536)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            if not data:
                break

    def do_GET(self):
        self.forward("GET")

    def do_POST(self):
        self.forward("POST")


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Proxy)
print(f"record: http://127.0.0.1:{server.server_address[1]} -> {sys.argv[2]}, requests to {path}", flush=True)
server.serve_forever()
