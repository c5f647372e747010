// Command httpget fetches a URL until it answers 200 (or a deadline passes),
// prints the status and body, and exits 0 on success. It is the client image
// of the cluster smoke test (a Go program: static busybox wget crashes in pods).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

var client = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

func main() {
	url := flag.String("url", "", "URL to fetch")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "usage: httpget -url URL [-timeout 60s]")
		os.Exit(2)
	}
	deadline := time.Now().Add(*timeout)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			cancel()
			fmt.Printf("attempt %d: %s\n%s\n", attempt, resp.Status, body)
			if resp.StatusCode == http.StatusOK {
				os.Exit(0)
			}
		} else {
			cancel()
			fmt.Printf("attempt %d: %v\n", attempt, err)
		}
		if time.Now().After(deadline) {
			os.Exit(1)
		}
		time.Sleep(time.Second)
	}
}
