"""What answers on a simulated pod's ports (pods/portforward): nginx's pages for nginx
images on port 80, a short 200 for declared ports of other images, nothing elsewhere."""

from __future__ import annotations

import asyncio

from pinnace.api.streams import STDOUT
from pinnace.kubelet.listeners import listens, serve_http

NGINX = {"name": "web", "image": "nginx:1.27"}
APP = {"name": "app", "image": "example/app:1", "ports": [{"containerPort": 8080}]}


class Connection:
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)
        self.answer = b""

    async def read(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""

    async def write(self, stream: int, data: bytes) -> None:
        assert stream == STDOUT
        self.answer += data


def answer(container: dict[str, object], port: int, *chunks: bytes) -> bytes:
    connection = Connection(*chunks)
    asyncio.run(serve_http(connection, container, port, 0.0))
    return connection.answer


def test_who_listens_where() -> None:
    assert listens(NGINX, 80) and not listens(NGINX, 81)
    assert listens(APP, 8080) and not listens(APP, 80)
    assert not listens({**APP, "ports": [{"containerPort": 8080, "protocol": "UDP"}]}, 8080)


def test_nginx_answers_its_welcome_page_and_its_404() -> None:
    head, body = answer(NGINX, 80, b"GET / HTTP/1.1\r\n", b"Host: x\r\n\r\n").split(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
    assert b"Content-Length: 615" in head and b"Date: Thu, 01 Jan 1970 00:00:00 GMT" in head
    assert b"<h1>Welcome to nginx!</h1>" in body and len(body) == 615
    assert answer(NGINX, 80, b"GET /nope HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404 Not Found")
    assert answer(NGINX, 80, b"HEAD / HTTP/1.1\r\n\r\n").endswith(b"\r\n\r\n")


def test_other_images_answer_a_short_200_and_a_silent_client_gets_nothing() -> None:
    reply = answer(APP, 8080, b"GET /healthz HTTP/1.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 OK")
    assert reply.endswith(b"\r\n\r\napp (example/app:1) answers on port 8080\n")
    assert answer(APP, 8080) == b""
