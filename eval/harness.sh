# coderun eval harness for bash items (see the eval package's documentation,
# "Verdicts a solution cannot forge"). This shell, T, is trusted: it runs
# the tests; the solution runs only in processes of its own (U), each in a
# Landlock domain nested in the sandbox's, from which the kernel lets it
# neither read T's memory or descriptors (/proc/<T>/mem, fd, environ: the
# ptrace checks) nor, on Linux 6.12 and later, signal T. T reads the run's
# marker and the tests from its standard input before any U exists, gives
# every U /dev/null for its standard input until then, runs the tests in its
# own shell with the solution's functions standing for calls into a fresh U
# each, and prints the marker only when the tests ran to their end.
#
# Set by the program before this: __cr_solution (the solution's source).

# __cr_landlock is a Python program that enters a nested Landlock domain
# (handling only the making of block devices, which nothing in a sandbox
# may do anyway; and, where the kernel has scopes, signals and abstract unix
# sockets) and executes its arguments. Exit 125 when it cannot.
__cr_landlock='import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
abi = libc.syscall(444, None, 0, 1)
if abi >= 1:
    attr = struct.pack("QQQ", 1 << 11, 0, 3) if abi >= 6 else struct.pack("Q", 1 << 11)
    fd = libc.syscall(444, attr, len(attr), 0)
    if fd < 0 or libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, fd, 0) != 0:
        sys.stderr.write("coderun eval: cannot enter a Landlock domain: %s\n" % os.strerror(ctypes.get_errno()))
        sys.exit(125)
    os.close(fd)
os.execv(sys.argv[1], sys.argv[1:])'

# __cr_u runs its arguments as the solution's process.
__cr_u() {
	"$__cr_python" -I -S -c "$__cr_landlock" "$__cr_bash" --norc --noprofile "$@"
}

# __cr_call runs the solution's function $1 with the rest as its arguments
# in a fresh U, with this call's standard streams; its status is the call's.
__cr_call() {
	__cr_u -c '. "$0" >/dev/null 2>&1 </dev/null; "$@"' "$__cr_file" "$@"
}

# __cr_special says whether $1 is a variable of bash's own, or one that
# changes how the shell or the programs it starts behave.
__cr_special() {
	case $1 in
	BASH* | ENV | CDPATH | GLOBIGNORE | PROMPT_COMMAND | POSIXLY_CORRECT | FUNCNEST | TMOUT | HIST* | \
		LC_* | LANG | LANGUAGE | TIMEFORMAT | EXECIGNORE | FIGNORE | INPUTRC | MAIL* | PS[0-4] | COMP* | \
		auto_resume | histchars | HOSTFILE | LINES | COLUMNS | OPT* | SHELLOPTS | TEXTDOMAIN* | READLINE_* | \
		TZ | IFS | PATH | HOME | SHELL | PWD | OLDPWD | UID | EUID | PPID | SECONDS | RANDOM | SRANDOM | \
		LINENO | EPOCH* | PIPESTATUS | FUNCNAME | GROUPS | HOSTNAME | HOSTTYPE | MACHTYPE | OSTYPE | SHLVL | \
		TERM | TMPDIR | LD_* | PYTHON* | NODE* | __cr_*) return 0 ;;
	esac
	return 1
}

# __cr_names has a U load the solution (its output is the program's, its
# standard input /dev/null) and list on fd 3 what it defined, NUL-separated:
# "F" and a function's name; "V", a scalar variable's name and its value.
# The list is the solution's word only: __cr_setup checks every name.
IFS= read -r -d '' __cr_names <<'EOF'
declare -A __cr_had
for __cr_n in $(compgen -v) $(compgen -A function); do __cr_had[$__cr_n]=1; done
. "$0" </dev/null
for __cr_n in $(compgen -A function); do
	[[ -n ${__cr_had[$__cr_n]} ]] || printf 'F\0%s\0' "$__cr_n" >&3
done
for __cr_n in $(compgen -v); do
	[[ -z ${__cr_had[$__cr_n]} && $__cr_n != __cr_* ]] || continue
	[[ $(declare -p "$__cr_n" 2>/dev/null) == "declare -"[-rxil]*" "* ]] && printf 'V\0%s\0%s\0' "$__cr_n" "${!__cr_n}" >&3
done
EOF

# __cr_setup reads the marker and the tests, then defines, for each
# function of the solution's that the tests use, a function that calls it
# in a U, and sets each scalar variable of the solution's that they use.
__cr_setup() {
	IFS= read -r __cr_marker
	__cr_tests=$(cat)
	if [[ -z $__cr_marker || -z ${__cr_tests//[[:space:]]/} ]]; then
		echo "coderun eval: no tests on standard input" >&2
		exit 1
	fi
	__cr_python=$(command -v python3) && __cr_bash=$(command -v bash) || {
		echo "coderun eval: the bash harness needs python3 and bash in the sandbox" >&2
		exit 1
	}
	__cr_file=$(mktemp /tmp/coderun-solution.XXXXXXXX) && printf '%s\n' "$__cr_solution" >"$__cr_file" || exit 1
	# Only names the tests use, that are not the shell's own or already
	# something here (a builtin, a keyword, a command on PATH, a variable),
	# are taken.
	local __cr_k __cr_n __cr_v
	exec 4>&1
	while IFS= read -r -d '' __cr_k && IFS= read -r -d '' __cr_n; do
		if [[ $__cr_k == V ]] && ! IFS= read -r -d '' __cr_v; then
			break
		fi
		[[ $__cr_n =~ ^[A-Za-z_][A-Za-z0-9_]*$ && $__cr_tests == *"$__cr_n"* ]] || continue
		__cr_special "$__cr_n" && continue
		case $__cr_k in
		F) [[ -z $(type -t "$__cr_n") ]] && eval "$__cr_n() { __cr_call $__cr_n \"\$@\"; }" ;;
		V) [[ -z ${!__cr_n+set} ]] && printf -v "$__cr_n" '%s' "$__cr_v" ;;
		esac
	done < <(__cr_u -c "$__cr_names" "$__cr_file" 3>&1 1>&4 4>&- </dev/null)
	exec 4>&-
}

__cr_setup
__cr_reached=
eval "$__cr_tests"$'\n''__cr_reached=1'
if [[ $__cr_reached == 1 ]]; then
	printf '\n%s\n' "$__cr_marker"
	exit 0
fi
echo "coderun eval: the tests did not run to their end" >&2
exit 1
