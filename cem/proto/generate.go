// Package proto holds the messages and the gRPC service of the plugin protocol, generated from
// cem.proto. Package cem converts them to and from its own types; nothing else should need them.
//
// To regenerate after editing cem.proto, with protoc from Debian's protobuf-compiler
// (/usr/bin/protoc, which also finds the well-known types under /usr/include) and the two
// generators on PATH (go install puts them in $(go env GOPATH)/bin):
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.6
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.3.0
//	go generate ./cem/proto
//
// The versions are pinned to what go-plugin requires: protoc-gen-go v1.36.6 matches
// google.golang.org/protobuf v1.36.6, and protoc-gen-go-grpc v1.3.0 is the newest generator
// whose code (grpc.SupportPackageIsVersion7) builds against google.golang.org/grpc v1.61.0;
// v1.4 and later need grpc v1.62 or newer.
package proto

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative cem.proto
