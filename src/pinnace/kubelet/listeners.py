"""What answers on a simulated pod's ports, for pods/portforward (CRI's PortForward, which
connects to the port inside the pod's network namespace).

A running container listens on the TCP ports it declares (`containerPorts`) and on those its
image is known to serve (an nginx image: 80, whether declared or not, as the Python client's own
port-forward test relies on). What listens is a small HTTP responder: nginx's welcome page
(and its 404 page elsewhere) for nginx images, a short plain-text 200 for any other; each
connection gets one answer, then is closed. Any other port refuses the connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from email.utils import formatdate
from typing import Any

from pinnace.api.streams import STDOUT, StreamIO
from pinnace.kubelet.runtime import image_repository

NGINX_PORT = 80
"""Where an nginx image serves, declared or not."""
MAX_REQUEST_HEAD = 64 * 1024
NGINX_WELCOME = """<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p>For online documentation and support please refer to
<a href="http://nginx.org/">nginx.org</a>.<br/>
Commercial support is available at
<a href="http://nginx.com/">nginx.com</a>.</p>

<p><em>Thank you for using nginx.</em></p>
</body>
</html>
"""
NGINX_NOT_FOUND = """<html>
<head><title>404 Not Found</title></head>
<body>
<center><h1>404 Not Found</h1></center>
<hr><center>nginx</center>
</body>
</html>
"""


def listens(container: Mapping[str, Any], port: int) -> bool:
    """Whether the container (its spec) listens on TCP `port` while it runs."""
    declared = {
        p.get("containerPort")
        for p in container.get("ports") or ()
        if (p.get("protocol") or "TCP") == "TCP"
    }
    return port in declared or (port == NGINX_PORT and _nginx(container))


def refused(sandbox: str, port: int) -> str:
    """containerd's error when nothing listens on the port."""
    return (
        f'failed to execute portforward in network namespace "/var/run/netns/cni-{sandbox}": '
        f'failed to connect to localhost:{port} inside namespace "{sandbox}", IPv4: dial tcp4 '
        f"127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: "
        "connect: connection refused "
    )


async def serve_http(io: StreamIO, container: Mapping[str, Any], port: int, now: float) -> None:
    """Answer one HTTP request on the connection, then close it."""
    head = b""
    while b"\r\n\r\n" not in head and b"\n\n" not in head and len(head) < MAX_REQUEST_HEAD:
        data = await io.read()
        if not data:
            return
        head += data
    words = head.split(b"\r\n", 1)[0].split()
    method = words[0].decode("latin-1") if words else ""
    path = words[1].decode("latin-1").split("?", 1)[0] if len(words) > 1 else "/"
    image = str(container.get("image") or "")
    if _nginx(container):
        found = path in ("/", "/index.html")
        status = "200 OK" if found else "404 Not Found"
        body, content_type = (NGINX_WELCOME if found else NGINX_NOT_FOUND), "text/html"
        server = "nginx"
    else:
        status, content_type, server = "200 OK", "text/plain; charset=utf-8", "pinnace"
        body = f"{container.get('name', '')} ({image}) answers on port {port}\n"
    payload = body.encode()
    answer = (
        f"HTTP/1.1 {status}\r\nServer: {server}\r\nDate: {formatdate(now, usegmt=True)}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    await io.write(STDOUT, answer if method == "HEAD" else answer + payload)


def _nginx(container: Mapping[str, Any]) -> bool:
    """An nginx image (`nginx`, `nginx:1.27`, `bitnami/nginx` ...)."""
    return image_repository(str(container.get("image") or "")).rsplit("/", 1)[-1] == "nginx"
