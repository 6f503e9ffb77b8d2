# coderun session driver for bash (the protocol is described in session/doc.go).
#
# Started by the sandbox's bash bootstrap, it keeps private copies of the
# standard output and error pipes and replaces itself with an interactive
# bash that reads command lines from standard input. Interactive, because
# only an interactive shell treats Ctrl-C as a terminal does: SIGINT stops
# the running command and the rest of the command line, loops and functions
# included, and the shell goes back to its prompt with its state intact.
#
# The host's first command line is "__cr_init NONCE": NONCE, a random
# string that starts every marker line, so that user output cannot be
# mistaken for a marker by accident, reaches the shell that way and not by
# its environment. The host then sends each cell as one command line, the
# code quoted as $'...' with every byte that is not a plain printable
# character escaped as \xHH (so the line has no newline and nothing for
# history expansion), with KEY a random string of the host's for this cell:
#
#   __cr_read ID KEY $'CODE' && eval "$__cr_code" </dev/null
#
# __cr_read keeps the code and writes "NONCE:S:ID:KEY\n" (started) on
# stdout and stderr (each stream's text after it belongs to the cell);
# the code runs at the top level of the shell, so variables, functions,
# aliases, the working directory and shell options persist. Before each
# prompt, PROMPT_COMMAND writes "NONCE:D:ID:KEY:STATUS\n" (done) on both
# stdout and stderr, after everything the cell wrote to them, and puts fd
# 1 and 2 back on the pipes; the prompt after __cr_init writes "NONCE:R\n"
# (ready) on both instead. The cell can read NONCE and its KEY: the host
# takes "done" as a claim and ends the cell once it sees this shell waiting
# for its next command line (session/idle.go). A KEY keeps the background
# jobs of one cell, which know only the keys of cells before them, from
# marking a later cell's start or end. "exit" is a function that runs the
# builtin with its stderr on /dev/null, so that the interactive shell's
# "exit" line does not join the cell's stderr.
exec {__cr_out}>&1 {__cr_err}>&2

__cr_init() {
	export -n __cr_out __cr_err PROMPT_COMMAND PS1 PS2 PS0 HISTFILE
	export -nf __cr_init __cr_read __cr_done
	set +o history +H
	exec 2>&"$__cr_err"
	__cr_nonce=$1
	__cr_id=0
	__cr_key=
	PROMPT_COMMAND=__cr_done
	# An interactive bash says "exit" on stderr as the builtin exits: that
	# is the driver's shell talking, not the cell.
	exit() { builtin exit "$@" 2>/dev/null; }
}

__cr_read() {
	{ local -; set +xv; } 2>/dev/null
	__cr_id=$1
	__cr_key=$2
	__cr_code=$3
	printf '%s:S:%s:%s\n' "$__cr_nonce" "$__cr_id" "$__cr_key" >&"$__cr_out"
	printf '%s:S:%s:%s\n' "$__cr_nonce" "$__cr_id" "$__cr_key" >&"$__cr_err"
}

__cr_done() {
	{ local __cr_status=$? __cr_m -; set +xveu; } 2>/dev/null
	exec 1>&"$__cr_out" 2>&"$__cr_err"
	__cr_m=R
	[ -n "$__cr_key" ] && __cr_m=D:$__cr_id:$__cr_key:$__cr_status
	printf '%s:%s\n' "$__cr_nonce" "$__cr_m"
	printf '%s:%s\n' "$__cr_nonce" "$__cr_m" >&2
}

export __cr_out __cr_err
export -f __cr_init __cr_read __cr_done
export PROMPT_COMMAND= PS1= PS2= PS0= HISTFILE=
exec bash --norc --noprofile --noediting -i 2>/dev/null
