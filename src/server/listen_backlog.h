// The listening socket's accept-queue depth. The packaged cpp-httplib listens with a backlog of
// 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when its shared library was built): a burst of connections
// beyond it (bench serve opens 64 at once) overflows the accept queue, and the extra connections
// wait on SYN retransmits or are lost. Linux lets listen() be called again on a listening socket
// to change its backlog, so the server finds its socket by port and deepens it.
#pragma once

namespace portllm::server {

// This process's listening TCP socket on `port` (any address), or -1.
int find_listening_socket(int port);
// listen(fd, SOMAXCONN) on that socket; false if there is none.
bool deepen_listen_backlog(int port);

}  // namespace portllm::server
