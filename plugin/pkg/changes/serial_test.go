package changes

import "testing"

func TestNextSerial(t *testing.T) {
	now := NextSerial(0)
	if NextSerial(now) != now+1 {
		t.Error("NextSerial does not move past a serial from this second")
	}
}
