module github.com/besim/besim

go 1.26
