// Go's crypto/x509 verdict on CA + leaf, standard library only (built with GO111MODULE=off).
//
// Reads lines "ID<TAB>CA.pem<TAB>LEAF.pem<TAB>HOST" on stdin and prints, for each,
// "ID<TAB>ACCEPT" or "ID<TAB>REJECT<TAB>error" -- what a Go TLS client dialling HOST (a DNS
// name or an IP literal) with only CA as root would decide about LEAF.
package main

import (
	"bufio"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
)

func load(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func verdict(caPath, leafPath, host string) error {
	ca, err := load(caPath)
	if err != nil {
		return fmt.Errorf("parse CA: %v", err)
	}
	leaf, err := load(leafPath)
	if err != nil {
		return fmt.Errorf("parse leaf: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = leaf.Verify(x509.VerifyOptions{
		DNSName:   host, // an IP literal here is checked against the IP SANs
		Roots:     roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Split(in.Text(), "\t")
		if len(f) != 4 {
			continue
		}
		if err := verdict(f[1], f[2], f[3]); err != nil {
			fmt.Printf("%s\tREJECT\t%s\n", f[0], strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Printf("%s\tACCEPT\n", f[0])
		}
	}
}
