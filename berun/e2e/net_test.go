package e2e

import (
	"net"
	"time"
)

func dialTCP(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) }
