while IFS= read -r -d '' __coderun_kv <&3 && [ -n "$__coderun_kv" ]; do export "$__coderun_kv"; done; __coderun_code=$(cat <&3); exec 3<&-; unset __coderun_kv; eval "$__coderun_code"
