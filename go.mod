module github.com/besim/besim

go 1.26

require gopkg.in/yaml.v3 v3.0.1

require github.com/google/go-cmp v0.7.0 // indirect
