// Command pause is the sandbox ("pause") container of the local cluster: it
// holds the pod's namespaces, reaps orphaned children and exits on SIGINT or
// SIGTERM, like Kubernetes' own pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
