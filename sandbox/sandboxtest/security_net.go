//go:build linux

package sandboxtest

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// listenTCP opens a TCP listener on every host address and counts the
// connections it accepts.
func listenTCP(t *testing.T) (port int, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// tcpToHost models code reaching services on the host (databases, admin
// APIs, the coderun server itself, SSH) over TCP: the test listens on every
// host address, and the program connects to that port and to SSH on every
// host address, the loopback included, and on the host's gateways.
func (h *harness) tcpToHost(t *testing.T) {
	port, accepted := listenTCP(t)
	ips := append(hostIPs(), hostGateways()...)
	h.attack(t, attackPy(map[string]any{"ips": ips, "ports": []int{port, 22}}, `
for ip in ARGS["ips"]:
    for port in ARGS["ports"]:
        def connect(ip=ip, port=port):
            s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect((ip, port))
                return "connected"
            finally:
                s.close()
        must_fail("TCP connect to host %s port %d" % (ip, port), connect)
done()
`))
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n > 0 {
		t.Errorf("CONTAINMENT FAILURE: the host's listener on port %d accepted %d connections from the sandbox", port, n)
	}
}

// udpToHost models code sending datagrams to host services (syslog, DNS,
// metrics agents): the test listens on a UDP port on every host address
// and must receive nothing, although sending may appear to succeed inside
// the sandbox's own network.
func (h *harness) udpToHost(t *testing.T) {
	pc, err := net.ListenPacket("udp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	token := "coderun-udp-" + randomHex(8)
	h.attack(t, attackPy(map[string]any{"ips": append(hostIPs(), hostGateways()...), "port": port, "token": token}, `
for ip in ARGS["ips"]:
    s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for i in range(3):
            s.sendto(ARGS["token"].encode(), (ip, ARGS["port"]))
        print("sent to %s (the host must not receive it)" % ip)
    except OSError as e:
        blocked("UDP send to %s" % ip, ename(e.errno))
    finally:
        s.close()
done()
`))
	buf := make([]byte, 2048)
	for {
		_ = pc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			break
		}
		if bytes.Contains(buf[:n], []byte(token)) {
			t.Errorf("CONTAINMENT FAILURE: the host received a datagram from the sandbox (from %v)", from)
		}
	}
}

// dnsResolution models code resolving names (the first step of any
// exfiltration, and a covert channel by itself through a resolver): name
// lookups must fail, and raw queries to the host's resolvers, its gateways
// and public resolvers must get no answer.
func (h *harness) dnsResolution(t *testing.T) {
	resolvers := append(append(hostResolvers(), hostGateways()...), "8.8.8.8", "1.1.1.1", "2001:4860:4860::8888")
	h.attack(t, attackPy(map[string]any{"resolvers": resolvers}, `
for name in ["example.com", "proxy.golang.org", "deb.debian.org", "registry.npmjs.org"]:
    must_fail("resolve " + name, socket.getaddrinfo, name, 443)
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in "example.com".split(".")) + b"\0" + struct.pack(">HH", 1, 1)
for ip in ARGS["resolvers"]:
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    def udp(ip=ip, fam=fam):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(1)
        try:
            s.sendto(q, (ip, 53))
            return "answer of %d bytes" % len(s.recv(512))
        finally:
            s.close()
    def tcp(ip=ip, fam=fam):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect((ip, 53))
            return "connected"
        finally:
            s.close()
    must_fail("DNS query over UDP to %s" % ip, udp)
    must_fail("DNS over TCP to %s" % ip, tcp)
done()
`))
}

// internetEgress models exfiltration to the internet, including through
// the hosts the machine itself may reach (the Go module proxy, Debian
// mirrors): the sandbox has no interface but loopback and no route, and
// every connection fails.
func (h *harness) internetEgress(t *testing.T) {
	targets := []string{"1.1.1.1", "8.8.8.8", "2606:4700:4700::1111"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, name := range []string{"proxy.golang.org", "deb.debian.org"} {
		if addrs, err := net.DefaultResolver.LookupHost(ctx, name); err == nil {
			targets = append(targets, addrs...)
		}
	}
	h.attack(t, attackPy(map[string]any{"targets": targets}, `
lines = read("/proc/net/dev").decode().splitlines()[2:]
ifaces = [l.split(":")[0].strip() for l in lines]
if [i for i in ifaces if i != "lo"]:
    escaped("network interfaces besides loopback: %s" % ifaces)
else:
    blocked("find a network interface", "only %s" % ifaces)
routes = read("/proc/net/route").decode().splitlines()[1:]
if routes:
    escaped("IPv4 routes exist: %s" % routes)
for ip in ARGS["targets"]:
    for port in (443, 80):
        def connect(ip=ip, port=port):
            s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect((ip, port))
                return "connected"
            finally:
                s.close()
        must_fail("connect to %s port %d" % (ip, port), connect)
done()
`))
}

// rawSockets models packet forging and sniffing with raw IP sockets
// (spoofed sources, ICMP tunnels, scanning): all need CAP_NET_RAW.
func (h *harness) rawSockets(t *testing.T) {
	h.attack(t, attackPy(nil, `
for fam, typ, proto, what in [
        (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, "raw ICMP"),
        (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW, "raw IP (spoofing)"),
        (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP, "raw TCP"),
        (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP, "raw UDP"),
        (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6, "raw ICMPv6"),
        (socket.AF_INET, 10, socket.htons(3), "SOCK_PACKET (legacy sniffer)")]:
    must_fail("open a %s socket" % what, socket.socket, fam, typ, proto)
done()
`))
}

// packetSockets models link-layer access with AF_PACKET: sniffing every
// frame on an interface, or injecting frames (and a long history of kernel
// bugs: CVE-2016-8655, CVE-2017-7308, CVE-2020-14386).
func (h *harness) packetSockets(t *testing.T) {
	h.attack(t, attackPy(nil, `
for typ in (socket.SOCK_RAW, socket.SOCK_DGRAM):
    must_fail("open an AF_PACKET socket of type %d" % typ, socket.socket, socket.AF_PACKET, typ, socket.htons(3))
done()
`))
}

// vsock models code talking to the hypervisor or other VMs over AF_VSOCK,
// which no network namespace confines. The program only creates sockets
// (it never connects, so nothing reaches the hypervisor even on failure).
func (h *harness) vsock(t *testing.T) {
	h.attack(t, attackPy(nil, `
AF_VSOCK = 40
for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
    must_fail("create an AF_VSOCK socket of type %d" % typ, socket.socket, AF_VSOCK, typ, 0)
done()
`))
}

// rareSocketFamilies models attacks on rarely used protocol families,
// whose code is reachable from any process that can create the socket and
// which have produced many local privilege escalations (AF_ALG, AF_KEY,
// TIPC, RDS, CAN, bluetooth, XDP, PPPoX, LLC, NFC, SMC and others).
func (h *harness) rareSocketFamilies(t *testing.T) {
	h.attack(t, attackPy(nil, `
families = {"AF_AX25": 3, "AF_IPX": 4, "AF_APPLETALK": 5, "AF_NETROM": 6, "AF_ATMPVC": 8, "AF_X25": 9,
            "AF_ROSE": 11, "AF_KEY": 15, "AF_RDS": 21, "AF_PPPOX": 24, "AF_LLC": 26, "AF_CAN": 29,
            "AF_TIPC": 30, "AF_BLUETOOTH": 31, "AF_RXRPC": 33, "AF_ISDN": 34, "AF_PHONET": 35,
            "AF_IEEE802154": 36, "AF_CAIF": 37, "AF_ALG": 38, "AF_NFC": 39, "AF_KCM": 41,
            "AF_QIPCRTR": 42, "AF_SMC": 43, "AF_XDP": 44, "AF_MCTP": 45}
for name, fam in sorted(families.items(), key=lambda kv: kv[1]):
    opened = []
    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_RAW):
        try:
            socket.socket(fam, typ, 0).close()
            opened.append(typ)
        except OSError as e:
            last = ename(e.errno)
    if opened:
        escaped("%s sockets can be created (types %s)" % (name, opened))
    else:
        blocked("create %s sockets" % name, last)
done()
`))
}

// abstractUnixSocket models code connecting to host services that listen
// on abstract Unix sockets (which have no file to protect them and are
// scoped by network namespace: X11, D-Bus, containerd shims): the test
// listens on one and must accept nothing; a path socket in a host
// directory must be unreachable too.
func (h *harness) abstractUnixSocket(t *testing.T) {
	name := "coderun-test-" + randomHex(6)
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Skipf("cannot listen on an abstract socket: %v", err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	dir, err := os.MkdirTemp("", "coderun-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "s.sock")
	pln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer pln.Close()
	os.Chmod(path, 0o777)
	h.attack(t, attackPy(map[string]any{"name": name, "path": path}, `
def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(addr)
        return "connected"
    finally:
        s.close()
must_fail("connect to the host's abstract socket @" + ARGS["name"], connect, "\0" + ARGS["name"])
must_fail("connect to the host's socket " + ARGS["path"], connect, ARGS["path"])
if ("@" + ARGS["name"]) in read("/proc/net/unix").decode():
    escaped("the host's abstract socket is listed in /proc/net/unix")
done()
`))
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n > 0 {
		t.Errorf("CONTAINMENT FAILURE: the host's abstract socket accepted %d connections from the sandbox", n)
	}
}

// hostUnixSockets models code driving privileged host daemons through
// their control sockets: the container engine (root on the host by
// design), containerd, systemd, D-Bus, the journal.
func (h *harness) hostUnixSockets(t *testing.T) {
	h.attack(t, attackPy(nil, `
for p in ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock", "/run/crio/crio.sock",
          "/run/podman/podman.sock", "/run/systemd/private", "/run/systemd/notify", "/run/systemd/journal/socket",
          "/run/systemd/journal/stdout", "/dev/log", "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket",
          "/run/user/0/bus", "/run/snapd.socket", "/var/lib/lxd/unix.socket", "/run/coderun.sock"]:
    def connect(p=p):
        err = None
        for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
            s = socket.socket(socket.AF_UNIX, typ)
            try:
                s.connect(p)
                return "connected (type %d)" % typ
            except OSError as e:
                if err is None or e.errno != errno.EPROTOTYPE:
                    err = e
            finally:
                s.close()
        raise err
    must_fail("connect to " + p, connect)
done()
`))
}
