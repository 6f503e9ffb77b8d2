package docker

import _ "embed"

//go:embed initbin/coderun-docker-init.linux-amd64
var initProgram []byte
