package linux

import "slices"

// The tables of the sandbox's policy, for a runtime that applies the same
// policy by other means (sandbox/gvisor: a seccomp filter in its OCI
// config, which the Sentry applies, and a template root). Each returns a
// copy.

// DeniedSyscalls are the system calls the sandbox's filter refuses with
// EPERM.
func DeniedSyscalls() []string { return slices.Clone(deniedSyscalls) }

// NamespaceCloneFlags are the clone(2) flags the filter refuses: each
// would create a namespace.
func NamespaceCloneFlags() []uint64 { return slices.Clone(namespaceCloneFlags) }

// DeniedSocketDomains are the address families socket(2) is refused,
// listed up to last; every family above last is refused too.
func DeniedSocketDomains() (listed []uint64, last uint64) {
	return deniedSocketDomains(), lastListedDomain
}

// DeniedSocketTypes are the socket types refused, whatever socket(2)'s
// flags.
func DeniedSocketTypes() []uint64 { return slices.Clone(deniedSocketTypes) }

// NetlinkProtocol is the one netlink protocol a program may open.
func NetlinkProtocol() uint64 { return netlinkRoute }

// TopLevelEntries are the root's entries taken from the host's: links
// into /usr on merged-/usr systems, directories bound read-only on others.
func TopLevelEntries() []string { return slices.Clone(topLevel) }

// EtcDirs are the host's /etc directories the sandbox sees read-only;
// EtcFiles, the /etc files it sees copies of. Missing entries are skipped.
func EtcDirs() []string { return slices.Clone(etcDirs) }

// EtcFiles: see EtcDirs.
func EtcFiles() []string { return slices.Clone(etcFiles) }
