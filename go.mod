module github.com/flare-net/flare

go 1.26.0

require github.com/google/gopacket v1.1.19

require golang.org/x/sync v0.25.0

require (
	github.com/spf13/pflag v1.1.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
