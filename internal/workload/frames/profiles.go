package frames

import (
	"fmt"
	"sort"
	"strings"
)

// Profile is a frame format: resolution and bytes per pixel.
type Profile struct {
	Name          string
	Width, Height int
	BytesPerPixel int
}

// HeaderBytes is the per-frame header (as DPX and frametest files have);
// a frame's size is rounded up to a multiple of 4 KiB, as frametest does.
const HeaderBytes = 4096

// FrameBytes is the size of one frame file.
func (p Profile) FrameBytes() int64 {
	n := int64(p.Width)*int64(p.Height)*int64(p.BytesPerPixel) + HeaderBytes
	return (n + 4095) / 4096 * 4096
}

var resolutions = []struct {
	name string
	w, h int
}{{"SD", 720, 576}, {"HD", 1920, 1080}, {"2K", 2048, 1080}, {"UHD", 3840, 2160}, {"4K", 4096, 2160}, {"8K", 7680, 4320}}

// Pixel formats: bits per channel and bytes per pixel.
var formats = []struct {
	name string
	bpp  int
	what string
}{
	{"24bit", 3, "8-bit RGB"},
	{"32bit", 4, "8-bit RGBA"},
	{"10bit", 4, "10-bit RGB packed in 32 bits (DPX)"},
	{"16bit", 6, "16-bit RGB"},
}

// Profiles lists every built-in profile, named RESOLUTION-FORMAT (HD-24bit).
func Profiles() []Profile {
	var out []Profile
	for _, r := range resolutions {
		for _, f := range formats {
			out = append(out, Profile{Name: r.name + "-" + f.name, Width: r.w, Height: r.h, BytesPerPixel: f.bpp})
		}
	}
	return out
}

// LookupProfile finds a profile by name, ignoring case.
func LookupProfile(name string) (Profile, error) {
	var names []string
	for _, p := range Profiles() {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return Profile{}, fmt.Errorf("%q: unknown profile; `iolab frames --list` shows them (e.g. HD-24bit, 4K-10bit, 8K-24bit)", name)
}

// FormatDescription says what a format name means.
func FormatDescription(name string) string {
	for _, f := range formats {
		if strings.HasSuffix(name, "-"+f.name) {
			return f.what
		}
	}
	return ""
}
