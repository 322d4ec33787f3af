package frames

import (
	"fmt"
	"strconv"
	"strings"
)

// Profile is a frame format: resolution and bytes per pixel.
type Profile struct {
	Name          string
	Width, Height int
	BytesPerPixel int
	// Scheme is whose name it is: "vframetest" (vframetest's and
	// tframetest's profile table, names and sizes as there) or "iolab"
	// (iolab's own names that vframetest does not have).
	Scheme string
	// Warning says when the name meant another size in iolab before it
	// took vframetest's meaning.
	Warning string
}

// DefaultHeader is the bytes before each frame's pixels: vframetest's
// default header (its --header), so a profile's frames are the bytes
// vframetest writes.
const DefaultHeader = 64 << 10

// empty reports the profile of empty frames: files created and closed with
// nothing in them (vframetest's "empty").
func (p Profile) empty() bool { return p.Name == "empty" }

// FrameBytes is the size of one frame with a header of header bytes:
// width x height x bytes per pixel + header, rounded up to 4 KiB (a direct
// I/O boundary), as vframetest sizes them: an empty frame is its header
// alone (vframetest's --profile empty writes its 64 KiB header; with
// --header 0 the files are empty, as its --empty makes them).
func (p Profile) FrameBytes(header int64) int64 {
	n := int64(p.Width)*int64(p.Height)*int64(p.BytesPerPixel) + header
	return (n + 4095) / 4096 * 4096
}

// vframetest's profiles (its src/profile.c): name, width, height, bytes
// per pixel. Its DPX profiles' own 8 KiB header is replaced by the header
// option there as here.
var vframetest = []Profile{
	{"SD-32bit-cmp", 720, 480, 4, "", ""}, {"SD-24bit", 720, 480, 3, "", ""},
	{"HD-16bit", 1280, 720, 2, "", ""}, {"HD-24bit", 1280, 720, 3, "", ""}, {"HD-32bit", 1280, 720, 4, "", ""},
	{"FULLHD-32bit-cmp", 1920, 1080, 4, "", ""}, {"FULLHD-16bit", 1920, 1080, 2, "", ""}, {"FULLHD-24bit", 1920, 1080, 3, "", ""},
	{"FULLHD-32bit", 1920, 1080, 4, "", ""},
	{"2K-32bit-cmp", 2048, 1556, 4, "", ""}, {"2K-24bit", 2048, 1080, 3, "", ""},
	{"4K-32bit-cmp", 4096, 3112, 4, "", ""}, {"4K-16bit", 3840, 2160, 2, "", ""}, {"4K-24bit", 3840, 2160, 3, "", ""},
	{"4K-32bit", 3840, 2160, 4, "", ""},
	{"8K-16bit", 7680, 4320, 2, "", ""}, {"8K-24bit", 7680, 4320, 3, "", ""}, {"8K-32bit", 7680, 4320, 4, "", ""},
	{"DPX-2K-10bit", 2048, 1556, 4, "", ""}, {"DPX-FULLHD-10bit", 1920, 1080, 4, "", ""}, {"DPX-4K-10bit", 3840, 2160, 4, "", ""},
	{"DPX-8K-10bit", 7680, 4320, 4, "", ""},
	{"EXR-FULLHD-half", 1920, 1080, 6, "", ""}, {"EXR-4K-half", 3840, 2160, 6, "", ""}, {"EXR-8K-half", 7680, 4320, 6, "", ""},
	{"EXR-FULLHD-float", 1920, 1080, 12, "", ""}, {"EXR-4K-float", 3840, 2160, 12, "", ""}, {"EXR-8K-float", 7680, 4320, 12, "", ""},
	{"EXR-2K-half", 2048, 1080, 6, "", ""}, {"EXR-2K-float", 2048, 1080, 12, "", ""},
	{"EXR-2K-full-half", 2048, 1556, 6, "", ""}, {"EXR-2K-full-float", 2048, 1556, 12, "", ""},
	{"4K-DCI-16bit", 4096, 2160, 2, "", ""}, {"4K-DCI-24bit", 4096, 2160, 3, "", ""}, {"4K-DCI-32bit", 4096, 2160, 4, "", ""},
	{"DPX-4K-DCI-10bit", 4096, 2160, 4, "", ""}, {"EXR-4K-DCI-half", 4096, 2160, 6, "", ""}, {"EXR-4K-DCI-float", 4096, 2160, 12, "", ""},
	{"8K-DCI-16bit", 8192, 4320, 2, "", ""}, {"8K-DCI-24bit", 8192, 4320, 3, "", ""}, {"8K-DCI-32bit", 8192, 4320, 4, "", ""},
	{"DPX-8K-DCI-10bit", 8192, 4320, 4, "", ""}, {"EXR-8K-DCI-half", 8192, 4320, 6, "", ""}, {"EXR-8K-DCI-float", 8192, 4320, 12, "", ""},
	{"SD-PAL-24bit", 720, 576, 3, "", ""}, {"DPX-SD-PAL-10bit", 720, 576, 4, "", ""},
	{"empty", 0, 0, 0, "", ""},
}

// iolab's own names before it took vframetest's: RESOLUTION-FORMAT.
var (
	iolabResolutions = []struct {
		name string
		w, h int
	}{{"SD", 720, 576}, {"HD", 1920, 1080}, {"2K", 2048, 1080}, {"UHD", 3840, 2160}, {"4K", 4096, 2160}, {"8K", 7680, 4320}}
	iolabFormats = []struct {
		name string
		bpp  int
	}{{"24bit", 3}, {"32bit", 4}, {"10bit", 4}, {"16bit", 6}}
)

// Profiles lists every profile: vframetest's, then iolab's names that
// vframetest does not have. A name both had with different sizes means
// vframetest's size and carries a Warning.
func Profiles() []Profile {
	out := make([]Profile, 0, len(vframetest)+len(iolabResolutions)*len(iolabFormats))
	byName := map[string]int{}
	for _, p := range vframetest {
		p.Scheme = "vframetest"
		byName[p.Name] = len(out)
		out = append(out, p)
	}
	for _, r := range iolabResolutions {
		for _, f := range iolabFormats {
			p := Profile{Name: r.name + "-" + f.name, Width: r.w, Height: r.h, BytesPerPixel: f.bpp, Scheme: "iolab"}
			i, taken := byName[p.Name]
			switch {
			case !taken:
				out = append(out, p)
			case !sameSize(out[i], p):
				v := &out[i]
				v.Warning = fmt.Sprintf("%s is vframetest's %s; in iolab before 2026-11 it was %s, now %s", v.Name, v.Pixels(), p.Pixels(), sameAs(p))
			}
		}
	}
	return out
}

func sameSize(a, b Profile) bool {
	return a.Width == b.Width && a.Height == b.Height && a.BytesPerPixel == b.BytesPerPixel
}

// sameAs names the vframetest profile of p's size, or says how to give it.
func sameAs(p Profile) string {
	for _, v := range vframetest {
		if sameSize(v, p) {
			return v.Name
		}
	}
	return fmt.Sprintf("--profile %dx%dx%d", p.Width, p.Height, p.BytesPerPixel*8)
}

// Pixels is WIDTHxHEIGHT x BYTES.
func (p Profile) Pixels() string {
	return fmt.Sprintf("%dx%d x %d bytes", p.Width, p.Height, p.BytesPerPixel)
}

// SameAs names the other profiles of the same size, for --list.
func SameAs(p Profile, all []Profile) []string {
	var names []string
	for _, q := range all {
		if q.Name != p.Name && sameSize(p, q) && !p.empty() {
			names = append(names, q.Name)
		}
	}
	return names
}

// LookupProfile finds a profile by name, ignoring case, or reads a custom
// size as vframetest does: WIDTHxHEIGHTxBITS (1920x1080x24; bits 8, 16,
// 24 or 32).
func LookupProfile(name string) (Profile, error) {
	for _, p := range Profiles() {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	if parts := strings.Split(strings.ToLower(name), "x"); len(parts) == 3 {
		w, e1 := strconv.Atoi(parts[0])
		h, e2 := strconv.Atoi(parts[1])
		bits, e3 := strconv.Atoi(parts[2])
		if e1 == nil && e2 == nil && e3 == nil && w > 0 && h > 0 && w <= 1<<16 && h <= 1<<16 && (bits == 8 || bits == 16 || bits == 24 || bits == 32) {
			return Profile{Name: name, Width: w, Height: h, BytesPerPixel: bits / 8, Scheme: "custom"}, nil
		}
	}
	return Profile{}, fmt.Errorf("%q: unknown profile; `iolab frames --list` shows them (e.g. FULLHD-24bit, 4K-DCI-32bit, 8K-24bit), "+
		"or give WIDTHxHEIGHTxBITS (1920x1080x24)", name)
}
