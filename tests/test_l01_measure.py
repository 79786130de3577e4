"""Lesson 1 measurement and validation: case lists, cubin register counts, checks (GPU parts marked)."""
import pytest

from h100lab.measure import l01 as m
from h100lab.occupancy import occupancy
from h100lab.validation import CheckResult, all_checks
from h100lab.validation import l01 as v

H200_PROPS = {"name": "NVIDIA H200", "major": 9, "minor": 0, "multiProcessorCount": 132,
              "sharedMemPerMultiprocessor": 233472, "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 232448,
              "reservedSharedMemPerBlock": 1024, "regsPerMultiprocessor": 65536, "regsPerBlock": 65536,
              "maxThreadsPerMultiProcessor": 2048, "maxBlocksPerMultiProcessor": 32, "maxThreadsPerBlock": 1024,
              "warpSize": 32, "l2CacheSize": 62914560, "memoryBusWidth": 6016, "memoryClockRate": 3201000,
              "clockRate": 1980000, "totalGlobalMem": 150109880320, "totalConstMem": 65536,
              "persistingL2CacheMaxSize": 39321600, "accessPolicyMaxWindowSize": 134217728}


def _compiler():
    from h100lab import cuda
    reason = cuda.compiler_unavailable_reason()
    if reason:
        pytest.skip(reason)
    return cuda


def test_cases():
    cases = m.occupancy_cases()
    assert len(cases) > 30000
    assert all(c["dynamic_smem"] <= c["max_dynamic_smem"] for c in cases if c["optin"] == "max")
    # the default mode includes requests above the attribute: the API's "0 blocks" cases
    assert any(c["dynamic_smem"] > c["max_dynamic_smem"] for c in cases if c["optin"] == "default")
    assert {c["carveout"] for c in cases} == set(m.CARVEOUTS)
    assert len(m.occupancy_cases(**{"variants": m.QUICK["variants"], "blocks": m.QUICK["blocks"],
                                    "dynamic": m.QUICK["dynamic"], "carveouts": m.QUICK["carveouts"]})) < 600
    assert m.variant_options(40, 12000) == ("--maxrregcount=40", "-DSTATIC_SMEM=12000")
    names = [p["name"] for p in m.BANK_PATTERNS]
    assert len(names) == len(set(names))
    assert all(len(p["offsets"]) == 32 and max(p["offsets"]) < 65536 for p in m.BANK_PATTERNS)


def test_device_record():
    r = m.device_record(H200_PROPS | {"uuid": "x"})
    assert "uuid" not in r and r["multiProcessorCount"] == 132


@pytest.mark.parametrize("reg,static", [(24, 0), (63, 0), (65, 0), (168, 0), (255, 0), (40, 12000)])
def test_register_counts_are_controlled(reg, static):
    cuda = _compiler()
    prog = cuda.compile_kernel("l01_occupancy_regs", options=m.variant_options(reg, static))
    assert m.cubin_register_count(prog.cubin) == reg
    assert m.cubin_register_count(prog.cubin, "occupancy_probe") == reg


@pytest.mark.parametrize("width", [4, 8, 16])
def test_bank_kernel_compiles(width):
    cuda = _compiler()
    prog = cuda.compile_kernel("l01_bank_latency", options=(f"-DWIDTH={width}",))
    op = {4: "ld.volatile.shared.u32", 8: "ld.volatile.shared.v2.u32", 16: "ld.volatile.shared.v4.u32"}[width]
    assert op in prog.ptx
    assert m.cubin_register_count(prog.cubin) > 0


def test_cubin_reader_rejects_garbage():
    with pytest.raises(ValueError, match="ELF"):
        m.cubin_register_count(b"not a cubin")
    cuda = _compiler()
    prog = cuda.compile_kernel("l01_occupancy_regs", options=m.variant_options(32, 0))
    with pytest.raises(ValueError, match="no function"):
        m.cubin_register_count(prog.cubin, "nope")


def _synthetic_occupancy_records():
    out = []
    for c in m.occupancy_cases(m.QUICK["variants"], m.QUICK["blocks"], m.QUICK["dynamic"], m.QUICK["carveouts"]):
        r = dict(c, num_regs=max(24, c["maxrregcount"]), static_smem=c["static_request"],
                 attr_max_dynamic_smem=c["max_dynamic_smem"])
        r["api_blocks"] = occupancy(r["block_size"], r["num_regs"], r["dynamic_smem"],
                                    static_smem=r["static_smem"], max_dynamic_smem=r["max_dynamic_smem"],
                                    carveout=r["carveout"]).active_blocks
        out.append(r)
    return out


def test_checks_pass_and_fail():
    recs = _synthetic_occupancy_records()
    ok = v.check_occupancy(recs)
    assert ok.ok and ok.cases == len(recs)
    recs[3] = dict(recs[3], api_blocks=recs[3]["api_blocks"] + 1)
    recs[4] = dict(recs[4], api_blocks=None, api_error="CUDA_ERROR_INVALID_VALUE")
    bad = v.check_occupancy(recs)
    assert bad.mismatches >= 1 and not bad.ok and "driver errors" in bad.note

    assert v.check_device([H200_PROPS]).ok
    wrong = v.check_device([H200_PROPS | {"l2CacheSize": 50 * 2**20}])
    assert wrong.mismatches == 1 and wrong.examples[0]["field"] == "l2_bytes"

    banks = [{"name": f"s{w}", "width": 4, "model_wavefronts": w, "cycles_per_load": 30.0 + 2 * w}
             for w in (1, 2, 4, 8)]
    res = v.check_bank_latency(banks)
    assert res.ok and "2.0 more per extra wavefront" in res.note
    banks[2]["cycles_per_load"] = 31.0                   # 4 wavefronts faster than 2: an inversion
    assert v.check_bank_latency(banks).mismatches == 1
    flat = [dict(b, cycles_per_load=30.0) for b in banks]  # conflicts that cost nothing
    assert v.check_bank_latency(flat).mismatches == 1 and v.check_bank_latency(flat).examples[0]["wavefronts"] == 8
    assert isinstance(res, CheckResult)


def test_checks_registered():
    titles = [c.title for c in all_checks() if c.lesson == 1]
    assert len(titles) == 6 and any("Occupancy" in t for t in titles) and any("Nsight" in t for t in titles)
    assert any("Latency ladder" in t for t in titles) and any("Roofline kernel" in t for t in titles)


def test_main_without_gpu_says_why(capsys):
    from h100lab import cuda
    if cuda.available():
        pytest.skip("a GPU is present: the gpu tests run the measurement")
    assert m.main(["--quick"]) == 2
    assert "no usable GPU" in capsys.readouterr().err


@pytest.mark.gpu
def test_gpu_occupancy_quick():
    cases = m.occupancy_cases(m.QUICK["variants"], m.QUICK["blocks"], m.QUICK["dynamic"], m.QUICK["carveouts"])
    recs = m.measure_occupancy(cases, progress=False)
    res = v.check_occupancy(recs)
    assert res.ok, res.examples


@pytest.mark.gpu
def test_gpu_device_and_banks():
    assert v.check_device(m.measure_device()).ok
    res = v.check_bank_latency(m.measure_banks(repeats=3))
    assert res.ok, res.examples


def _write_synthetic(tmp_path, monkeypatch):
    from h100lab import data

    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    meta = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "test", "cuda": "13.0",
            "date": "2026-01-01", "command": "synthetic (test)"}
    data.write("l01/device_properties", [H200_PROPS], meta)
    data.write("l01/occupancy", _synthetic_occupancy_records(), meta)
    data.write("l01/bank_latency", [{"name": f"s{w}", "width": 4, "model_wavefronts": w, "cycles_per_load": 30.0 + w}
                                     for w in (1, 2, 4)], meta)
    cases = m.bank_wavefront_cases()
    recs, _ = m.bank_wavefront_records(cases, m.parse_ncu_csv(_fake_ncu_csv(cases)))
    data.write("l01/bank_wavefronts", recs, meta)


def test_hardware_report_from_datasets(tmp_path, monkeypatch):
    assert v.hardware_report(live=False)["source"] in (None, "dataset")
    _write_synthetic(tmp_path, monkeypatch)
    r = v.hardware_report(live=False)
    assert r["source"] == "dataset" and "synthetic" in r["where"] and r["reference"] == "H200 SXM"
    assert r["device"].ok and r["occupancy"].ok and r["banks"].ok
    assert all(row["equal"] for row in r["device_rows"])
    # the registered checks see the same datasets
    from h100lab.validation import run_all
    results = [(c.title, ds, res) for c, ds, res in run_all() if c.lesson == 1]
    assert len(results) == 6 and all(res is not None and res.ok for _, ds, res in results if ds is not None)
    assert sum(ds is not None for _, ds, _ in results) == 4      # the ladder and roofline datasets were not written


def test_hardware_report_without_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    r = v.hardware_report(live=False)
    assert r == {"source": None, "command": "python -m h100lab.measure.l01"}


class _FakeKernel:
    """Stands in for h100lab.cuda.Kernel: attributes from the compile options, driver answers from the model."""

    def __init__(self, options):
        self.regs = max(24, int(next(o for o in options if o.startswith("--maxrregcount=")).split("=")[1]))
        self.static = int(next((o.split("=")[1] for o in options if o.startswith("-DSTATIC_SMEM=")), 0))
        self.max_dyn = 49152 - self.static
        self.carve = -1

    def attributes(self):
        return {"num_regs": self.regs, "shared_size_bytes": self.static, "max_dynamic_shared_size_bytes": self.max_dyn,
                "local_size_bytes": 0}

    def set_max_dynamic_shared_memory(self, n):
        assert n + self.static <= 232448
        self.max_dyn = n

    def set_preferred_carveout(self, c):
        self.carve = c


def test_measure_occupancy_plumbing(monkeypatch):
    from h100lab import cuda

    class Prog:
        def __init__(self, options):
            self.options = options

        def function(self, name):
            assert name == "occupancy_probe"
            return _FakeKernel(self.options)

    monkeypatch.setattr(cuda, "compile_kernel", lambda name, options=(): Prog(options))
    monkeypatch.setattr(cuda, "occupancy_max_active_blocks", lambda k, b, d: occupancy(
        b, k.regs, d, static_smem=k.static, max_dynamic_smem=k.max_dyn, carveout=k.carve).active_blocks)
    cases = m.occupancy_cases(m.QUICK["variants"], m.QUICK["blocks"], m.QUICK["dynamic"], m.QUICK["carveouts"])
    recs = m.measure_occupancy(cases, progress=False)
    assert len(recs) == len(cases)
    assert {r["attr_max_dynamic_smem"] for r in recs if r["optin"] == "max" and r["static_smem"] == 0} == {232448}
    assert v.check_occupancy(recs).ok


def test_measure_banks_plumbing(monkeypatch):
    import numpy as np

    from h100lab import cuda
    from h100lab.memory.banks import wavefronts

    class Arr:
        def __init__(self, a):
            self.a = np.array(a)

        def to_host(self):
            return self.a

    class Fn:
        def __init__(self, width):
            self.width = width

        def set_max_dynamic_shared_memory(self, n):
            assert n == 65536

    class Prog:
        def __init__(self, options):
            self.width = int(options[0].split("=")[1])

        def function(self, name):
            return Fn(self.width)

    def launch(f, grid, block, offs, iters, cyc, sink, shared_mem=0):
        assert (grid, block, shared_mem) == (1, 32, 65536)
        cyc.a[0] = int(iters) * (28 + 2 * int(wavefronts(offs.a.tolist(), f.width)))

    monkeypatch.setattr(cuda, "compile_kernel", lambda name, options=(): Prog(options))
    monkeypatch.setattr(cuda, "to_device", lambda a: Arr(a))
    monkeypatch.setattr(cuda, "zeros", lambda shape, dtype: Arr(np.zeros(shape, dtype)))
    monkeypatch.setattr(cuda, "launch", launch)
    monkeypatch.setattr(cuda, "synchronize", lambda: None)
    recs = m.measure_banks(repeats=2)
    assert len(recs) == len(m.BANK_PATTERNS)
    assert v.check_bank_latency(recs).ok and "2.0 more per extra wavefront" in v.check_bank_latency(recs).note


# ------------------------------------------------------------------------------------------------
# bank wavefronts under Nsight Compute

def _fake_ncu_csv(cases, model=True, baseline=(0, 0, 0, 0), thousands=False):
    """Nsight Compute's --csv page for the baseline launch plus one launch per case."""
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    lines = ["==PROF== Connected to process 1234", "==PROF== Profiling \"bank_wavefronts\": 0%....100% - 1 pass",
             head]
    for i in range(len(cases) + 1):
        vals = list(baseline)
        if i:
            c = cases[i - 1]
            acc = v.model_wavefronts(c)
            wf = int(acc) if model else int(acc) + 1
            j = 0 if c["op"] == "ld" else 1
            vals[j] += wf
            vals[j + 2] += acc.conflicts
        for name, val in zip(m.BANK_WAVEFRONT_METRICS, vals):
            text = f"{val:,}" if thousands else str(val)
            lines.append(f'"{i}","1234","python3","127.0.0.1","bank_wavefronts","1","7","(32, 1, 1)","(1, 1, 1)",'
                         f'"0","9.0","Command line profiler metrics","{name}","","{text}"')
    return "\n".join(lines) + "\n"


def test_bank_wavefront_cases():
    cases = m.bank_wavefront_cases()
    assert len({c["name"] for c in cases}) >= 60
    assert cases == m.bank_wavefront_cases()                       # seeded: the same list every time
    assert {(c["op"], c["width"]) for c in cases} == set(m.BANK_WAVEFRONT_MODES)
    assert any(c["active"] != m.FULL_MASK for c in cases)
    assert any("SWIZZLE" in c["name"] for c in cases)
    acc = [v.model_wavefronts(c) for c in cases]
    assert any(a.pair_uniform for a in acc) and max(int(a) for a in acc) == 32
    with pytest.raises(ValueError, match="aligned"):
        m._case("bad", 8, "ld", [4] * 32)
    with pytest.raises(ValueError, match="32 lane offsets"):
        m._case("bad", 4, "ld", [0] * 31)


def test_ncu_command():
    cmd = m.ncu_command("/opt/ncu", "python3")
    assert cmd[:3] == ["/opt/ncu", "--clock-control", "none"]
    assert ",".join(m.BANK_WAVEFRONT_METRICS) in cmd and cmd[-1] == "--bank-wavefronts-run"


@pytest.mark.parametrize("thousands", [False, True])
def test_parse_ncu_csv_and_check(thousands):
    cases = m.bank_wavefront_cases()
    text = _fake_ncu_csv(cases, baseline=(1000, 0, 2000, 0), thousands=thousands)
    launches = m.parse_ncu_csv(text)
    assert [x["id"] for x in launches] == list(range(len(cases) + 1))
    recs, base = m.bank_wavefront_records(cases, launches)
    assert base[m.BANK_WAVEFRONT_METRICS[0]] == 1000
    assert len(recs) == len(cases) and recs[0]["offsets"] == cases[0]["offsets"]
    res = v.check_bank_wavefronts(recs)
    assert res.ok and res.cases == len(cases) and f"{len(cases)}/{len(cases)}" in res.note
    bad = v.check_bank_wavefronts(m.bank_wavefront_records(cases, m.parse_ncu_csv(
        _fake_ncu_csv(cases, model=False)))[0])
    assert bad.mismatches == len(cases) and bad.examples[0]["measured"] == bad.examples[0]["model"] + 1
    rows = v.bank_wavefront_table(recs, ["stride 2 words"])
    assert [r["op"] for r in rows] == ["ld", "st"] and rows[0]["ncu wavefronts"] == 2


def test_parse_ncu_csv_rejects_bad_output():
    cases = m.bank_wavefront_cases()
    with pytest.raises(ValueError, match="CSV header"):
        m.parse_ncu_csv("==PROF== No kernels were profiled.\n")
    launches = m.parse_ncu_csv(_fake_ncu_csv(cases[:3]))
    with pytest.raises(ValueError, match="expected"):
        m.bank_wavefront_records(cases, launches)
    with pytest.raises(ValueError, match="not a number"):
        m.parse_ncu_csv(_fake_ncu_csv(cases[:1]).replace('"1"\n', '"n/a"\n', 1))
    one = m.parse_ncu_csv(_fake_ncu_csv(cases[:1]))
    del one[1]["metrics"][m.BANK_WAVEFRONT_METRICS[2]]
    with pytest.raises(ValueError, match="lacks metrics"):
        m.bank_wavefront_records(cases[:1], one)


def test_bank_wavefront_kernel_compiles():
    cuda = _compiler()
    prog = cuda.compile_kernel("l01_bank_wavefronts")
    for op in ("ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32", "st.shared.b32", "st.shared.v2.b32",
               "st.shared.v4.b32"):
        assert op in prog.ptx


def test_bank_wavefront_report(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    assert v.bank_wavefront_report(live=False) == {"source": None,
                                                   "command": "python -m h100lab.measure.l01 --bank-wavefronts"}
    _write_synthetic(tmp_path, monkeypatch)
    r = v.bank_wavefront_report(live=False)
    assert r["source"] == "dataset" and r["check"].ok and "synthetic" in r["where"]
    assert sorted(row["pattern"] for row in r["rows"][::2]) == sorted(v.BANK_WAVEFRONT_SHOWN)
    assert all(row["model wavefronts"] == row["ncu wavefronts"] for row in r["rows"])
