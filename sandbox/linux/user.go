package linux

import (
	"fmt"
	"syscall"
)

// Users inside and outside. The sandbox's user namespace maps exactly two
// ids, both unprivileged on the host and different for every live sandbox
// of a Runtime (slots are handed out in turn from a random start):
//
//	inside 0    (init, which builds the sandbox)  → host base+2·slot
//	inside 1000 (the program)                     → host base+2·slot+1
//
// Host root is not mapped, so no process in the sandbox owns anything on the
// host, and the host's supplementary groups are dropped before anything
// runs. Files the program writes belong to its host id; the host reads them
// as root.
const (
	sandboxUID      = 1000
	sandboxHostname = "sandbox"
	uidSlots        = 1 << 15
	defaultBase     = 1_000_000
)

func idMappings(base, slot int) ([]syscall.SysProcIDMap, []syscall.SysProcIDMap) {
	m := []syscall.SysProcIDMap{
		{ContainerID: 0, HostID: base + 2*slot, Size: 1},
		{ContainerID: sandboxUID, HostID: base + 2*slot + 1, Size: 1},
	}
	return m, m
}

// generatedEtc returns generated /etc entries naming the sandbox's users and host.
func generatedEtc(hostname string) map[string]string {
	return map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
			fmt.Sprintf("sandbox:x:%d:%d:sandbox:/tmp:/bin/bash\n", sandboxUID, sandboxUID) +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         fmt.Sprintf("root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", sandboxUID),
		"hosts":         "127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":      hostname + "\n",
		"resolv.conf":   "# no network in the sandbox\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n",
	}
}

// baseEnv is the clean environment every program starts from.
func baseEnv(hostname string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"HOME=/tmp",
		"TMPDIR=/tmp",
		"USER=sandbox",
		"LOGNAME=sandbox",
		"SHELL=/bin/bash",
		"HOSTNAME=" + hostname,
		"LANG=C.UTF-8",
		"MPLBACKEND=Agg",
		"PYTHONDONTWRITEBYTECODE=1",
	}
}
