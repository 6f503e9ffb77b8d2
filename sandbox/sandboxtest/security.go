//go:build linux

package sandboxtest

import "testing"

// security runs every attack scenario. Each scenario's function documents
// the threat it models; the scenario names read as a list of the attacks a
// runtime withstands.
func (h *harness) security(t *testing.T) {
	h.runAll(t, []scenario{
		// Reading what belongs to the host or to other runs (security_read.go).
		{"ReadHostShadow", h.readHostShadow},
		{"ReadHostHomes", h.readHostHomes},
		{"ReadHostCanaries", h.readHostCanaries},
		{"ReadProjectFiles", h.readProjectFiles},
		{"ReadHostEnvironment", h.readHostEnvironment},
		{"ReadOtherRunWorkspace", h.readOtherRunWorkspace},
		{"ReadRuntimeBinaryAndState", h.readRuntimeBinaryAndState},

		// Writing outside the workspace (security_write.go).
		{"WriteUsr", h.writeUsr},
		{"WriteEtc", h.writeEtc},
		{"WriteRootDirs", h.writeRootDirs},
		{"WriteProcSys", h.writeProcSys},
		{"WriteSys", h.writeSys},

		// The network (security_net.go).
		{"TCPToHost", h.tcpToHost},
		{"UDPToHost", h.udpToHost},
		{"DNSResolution", h.dnsResolution},
		{"InternetEgress", h.internetEgress},
		{"RawSockets", h.rawSockets},
		{"PacketSockets", h.packetSockets},
		{"VsockToHypervisor", h.vsock},
		{"RareSocketFamilies", h.rareSocketFamilies},
		{"AbstractUnixSocketOnHost", h.abstractUnixSocket},
		{"HostUnixSockets", h.hostUnixSockets},

		// The kernel-facing attacks again from a C program (security_c.go).
		{"FromC", h.fromC},

		// Other processes (security_proc.go).
		{"ForkBomb", h.forkBomb},
		{"ProcessAndThreadLimit", h.processLimit},
		{"DaemonOutlivesRun", h.daemonOutlivesRun},
		{"SignalHostProcesses", h.signalHostProcesses},
		{"PtraceOutside", h.ptraceOutside},
		{"SeeHostProcesses", h.seeHostProcesses},
		{"SysVIPCOfHost", h.sysvIPC},

		// Exhausting resources (security_resources.go).
		{"MemoryBomb", h.memoryBomb},
		{"MemoryBombInChild", h.memoryBombInChild},
		{"MemoryBombViaTmpfs", h.memoryBombViaTmpfs},
		{"DiskFill", h.diskFill},
		{"InodeExhaustion", h.inodeExhaustion},
		{"StdoutFlood", h.stdoutFlood},
		{"StderrFlood", h.stderrFlood},
		{"InfiniteLoop", h.infiniteLoop},
		{"SleepForever", h.sleepForever},

		// Privileges and the kernel's attack surface (security_kernel.go).
		{"Mount", h.mount},
		{"Unshare", h.unshare},
		{"Chroot", h.chroot},
		{"SetuidRoot", h.setuidRoot},
		{"Capabilities", h.capabilities},
		{"NoNewPrivsAndSeccomp", h.noNewPrivs},
		{"KernelKeyring", h.keyring},
		{"BPF", h.bpf},
		{"PerfEvents", h.perfEvents},
		{"IOUring", h.ioUring},
		{"Userfaultfd", h.userfaultfd},
		{"Syscall32BitABI", h.syscall32},
		{"OpenByHandle", h.openByHandle},
		{"KernelModulesAndReboot", h.kernelModules},
		{"SetClock", h.setClock},
		{"KernelLog", h.kernelLog},
		{"DeviceNodes", h.deviceNodes},
		{"Mknod", h.mknod},

		// What /proc and /sys tell about the host (security_info.go).
		{"ProcMasked", h.procMasked},
		{"SysHostInfo", h.sysHostInfo},
		{"MountTable", h.mountTable},
		{"CgroupView", h.cgroupView},
		{"Hostname", h.hostname},

		// Files coming back out (security_files.go).
		{"SymlinkOut", h.symlinkOut},
		{"HardlinkToHostFile", h.hardlinkOut},
		{"SpecialFilesOut", h.specialFilesOut},
		{"LongNamesAndDeepPaths", h.longNames},

		// Files between the host and a sandbox: results saved on the host
		// and uploaded again, and what they cost the host (security_files.go).
		{"FilesOutAmplification", h.filesOutAmplification},
		{"LinksOutAndBackIn", h.linksOutAndBackIn},
		{"ManyFilesOut", h.manyFilesOut}, // security_manyfiles.go

		// Red-team pass 2: side channels and what the program may see and
		// change of the host (security_sidechannels.go).
		{"OOMScoreAdj", h.oomScoreAdj},
		{"HostIdentity", h.hostIdentity},
		{"InotifyOnSystemTree", h.inotifyOnSystemTree},
		{"LocksOnSystemTree", h.locksOnSystemTree},
		{"KernelUevents", h.kernelUevents},
		{"RandomStateAcrossRuns", h.randomAcrossRuns},
		{"HostUptime", h.hostUptime}, // security_clock.go

		// Red-team pass 2: descriptors inherited from the caller (security_fds.go).
		{"InheritedDescriptors", h.inheritedDescriptors},
	})
}
