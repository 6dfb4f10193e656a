package main

// Device implements tui.Backend: the profile's name, which the user chose
// to tell the device apart ("phone", "tablet"), where the status bar would
// otherwise show the device id the server knows it by; the id for the
// profile "default".
func (b backend) Device() string {
	if b.profile != "" && b.profile != "default" {
		return b.profile
	}
	return b.Client.Device()
}
