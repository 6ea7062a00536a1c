package byteexpress
import ("testing";"reflect")
func TestZZSize(t *testing.T){ for _, v := range []any{engine{}, cmd{}} { ty:=reflect.TypeOf(v); t.Logf("%s %d", ty.Name(), ty.Size()); for i:=0;i<ty.NumField();i++{f:=ty.Field(i); if f.Type.Size()>=16 {t.Logf("%s %d @%d", f.Name, f.Type.Size(), f.Offset)}}}}
