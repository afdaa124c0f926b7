module github.com/flare-net/flare

go 1.26
