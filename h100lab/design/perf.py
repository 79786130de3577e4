"""A predictive time model of the capstone GEMM (``l08_gemm.cu``) and of the book's step-by-step GEMM kernels
(lesson 8): the time of one launch for any variant, shape, SM count and tile order, and the gap to the datasheet
peak split into named parts, each in microseconds.

The model (:func:`calibrated`) runs every wave at **the form clock**: the clock its own activity gives it under the
power limit, two constants read off Nsight Compute's clocks, no clock fitted on a time (see "The form clock" below).
It replaced the **one-clock model** (``calibrated(form_clock=False)``: one sustained clock fitted on the times,
described first below, since every other part is shared) when a prospective test — predictions registered before
the H200 ran shapes no run had timed — gave the form clock 388 of 392 bf16 records within ±10 % and the one clock 331
(:func:`h100lab.validation.l08.fresh_summary`).

The model is a closed form built from three earlier models, each calibrated on its own lesson's data, and five
constants of its own:

* the **tensor cores** — :mod:`h100lab.tensorcore.timing` (lesson 7, fitted on ``data/l07/wgmma_timing``): one
  ``m64nNk16`` (bf16) or ``m64nNk32`` (e4m3) wgmma occupies the SM's tensor cores ``exec_cycles`` (≈ N/2 + 14
  cycles), its results are visible ``latency_tail`` cycles after it leaves them, a ``wait_group`` costs ``wait``
  cycles. :func:`issue_timing` runs each consumer warpgroup's k-block loop (its group of wgmmas, ``commit_group``,
  ``wait_group 0`` — or ``1`` with ``INFLIGHT`` — and, for FP8, the promotion FFMAs) against one in-order
  tensor-core queue: two cooperative warpgroups fill each other's waits, a lone ping-pong warpgroup without a
  group in flight leaves the queue idle while it waits;
* the **copies** — memory model 2 of :mod:`h100lab.sim.timing`, fitted by :func:`h100lab.validation.timing.fit`
  (lessons 3 and 5: ``l03/stream_sweep``, ``l03/tma_latency``, ``l05/ceilings``): the SM's TMA unit moves
  ``tma_bytes_per_ns``; a copy lands ``tma_latency_ns`` (+ ``dram_latency_ns`` when its bytes come from DRAM)
  after its transfer; HBM reads at most ``hbm_read_bytes_per_ns`` device-wide; a bulk store reads its source at
  ``tma_store_bytes_per_ns``; bounds that are nearly equal slow each other (the smooth maximum
  :func:`~h100lab.sim.timing.soft_period` with the fitted ``period_sharpness``);
* the **schedule** — :mod:`h100lab.design.schedule`: the persistent grouped tile order (or one tile per CTA for
  the non-persistent steps), the tiles of each CTA, the waves, and the L2-reuse estimate of each wave
  (:mod:`h100lab.design.traffic`: a wave's distinct A and B panels come from DRAM once when its CTAs are in step —
  the cooperative forms; a ping-pong form's sharers of a panel share a read only within a reuse window of
  consecutive CTAs, one constant fitted on the ping-pong tile orders at 8192³ of ``l08/gemm_orders``);
* the **shared memory** — :func:`h100lab.design.tiles.smem_bytes_per_clock`: the SS wgmmas read A once and B once
  per 64 rows of the tile, the TMA writes every stage, all against 32 banks × 4 B per SM clock (a spec value);
* fitted here on a documented subset of ``data/l08`` (:func:`calibrate`): ``tensor_ghz`` — the clock the tensor
  cores sustain under this load (the H200 runs below its boost clock; no clock is typed in);
  ``direct_store_bytes_per_ns`` — how fast one SM's consumer warps write a C tile with ``st.global`` (the epilogue
  without TMA store); optionally (``calibrate(fit_l2=True)``, off by default since the shared-memory bound came in:
  the held-out agreement is the same with or without it) ``l2_bytes_per_ns`` — what L2 delivers to the SMs' TMA
  units together, shared by the CTAs of a wave; for runs long enough to reach the power limit,
  ``throttled_ghz``; and, for cluster pairs whose consumers give a stage back to the peer CTA with
  ``mbarrier.arrive.release.cluster``, ``cluster_fence_ns`` — that fence's cost in the k-block loop (fitted on one
  record of the cluster run; lesson 3 measured it unloaded); and the **per-wave clock**'s two constants
  (:attr:`PerfParams.wave_clock`: a power budget and the clock cap of a partial wave) from the clocks the k-block
  traces read in the whole and the partial waves of two bf16 forms at 1280 × 3840 × 8192
  (:data:`WAVE_CLOCK_CALIBRATION`; trace records only, no timing record), every constant above fitted with it on;
* for the FP8 form, the **k-block trace** (``data/l08/gemm_trace``: ``l08_gemm.cu -DTRACE=1``'s %clock64 at each
  event of each k-block, ``benchmarks/trace_gemm.py``): the consumer chain's CUDA-core parts read off it
  (:func:`trace_constants`, in SM cycles) and the scale loads' latency from their issue to the end-of-block copies
  that wait for them, loaded by the wave's DRAM reads (:func:`scale_load_latency`: ``scale_load_ns`` +
  ``scale_load_ns_per_rate`` × rate), fitted on two untraced times of a later trace run (:data:`SCALE_CALIBRATION`;
  see the FP8 assumptions below).

**Per k-block** (``bk`` elements of K: one ring stage) of a CTA, the steady period is the smooth maximum of six
bounds::

    tensor   T_tc  = issue_timing(form).cycles / f               (f: tensor_ghz or throttled_ghz)
    tma      T_x   = (A tile + B tile / cluster) / min(tma_bytes_per_ns, l2_bytes_per_ns / active CTAs)
                                                       (the SM's TMA unit [and its share of L2]; B multicast per pair)
    smem     T_s   = (wgmma operand reads + stage writes [+ a ping-pong TMA-store epilogue's 2 · C bytes / k-blocks])
                     / (128 B/clk · f)
    hbm      T_h   = DRAM bytes of the wave / k-blocks / hbm_read_bytes_per_ns
    ring     R / S, R = expect_tx + issue + A+B bytes / tma_bytes_per_ns + tma_latency + miss · dram_latency
                        + wake + hold − try_wait hit + arrive
    producer Q = try_wait (phase complete) + expect_tx + 2 · TMA issue + loop branch   (specialized kernels)
    P = soft_period([T_tc, T_x, T_s, T_h, R / S, Q])
    delivery P = max(P, requested A+B k-slices of the wave / delivery ceiling)
                                         (a ping-pong wave out of step as a whole: delivery_waves; the others none)

(``hold``: how long the consumers keep a stage, from :func:`issue_timing`; ``miss`` = 1 − the wave's L2 hit rate;
the consumers' own per-k-block warp work — the full-barrier try_wait, ``wgmma.fence``, the empty-barrier arrive,
the loop branch — runs inside :func:`issue_timing`. In the ring's round trip one stage's bytes move at the SM's own
TMA rate — the L2 share is a throughput limit, the ``tma`` bound — and consumers blocked on the stage pay lesson
3's wake instead of the try_wait that finds a completed phase. A ring kernel without a producer (``cta_sync``)
frees a stage with its ``__syncthreads``, not an arrive; the thread that issues its TMA delays only its own
warpgroup, so the other warpgroup's wgmmas go first.)
**Per tile**: ``k_blocks · P``; cooperative consumers then wait for their last wgmma (``latency_tail + wait``) and
run the epilogue while the tensor cores idle (exposed); ping-pong consumers run it under the other consumer's
mainloop (exposed only past that mainloop and after the CTA's last tile). **Per launch**: the CTA with the most
tiles, its tiles wave by wave (a later, partial wave has fewer active CTAs: more of L2 and HBM each), plus the fill —
the first stage's load (issue, transfer, ``tma_latency + dram_latency``, wake). A non-persistent launch (one or two
tiles per CTA, steps 2–5) pays fill, mainloop and epilogue per CTA — except in a wave bound by L2 → SM delivery
(the ``delivery`` bound), which pays only its mainloops: the SMs share one delivery rate, so the others stream
while a CTA fills or stores (one fill and one epilogue per launch stay exposed) [model].

Assumptions (each a limit of the model, not of the kernel):

* every CTA is alike and alone on its SM (the ring takes most of the shared memory); the CTAs of a wave share L2's
  delivery and HBM equally; the L2's capacity and its two partitions are not modelled (nothing survives from one
  wave to the next) — the tile order enters through a wave's DRAM reads (:mod:`h100lab.design.traffic`): in step
  its distinct panels, for ping-pong forms one read per reuse window of CTAs holding a sharer, so the row-major
  ping-pong order (sharers of a B panel 16–32 CTAs apart) becomes bound by HBM. The DRAM counters
  (``l08/gemm_l2_traffic``) say the window is a model of the time more than of the bytes: the window's bytes and
  the HBM ceiling (lesson 5's read streams, above what tile reads reach) err in opposite directions at 8192³, and
  the row-major loss at 4096³ is not DRAM traffic (see the traffic module) but L2 → SM delivery: a ping-pong wave
  whose bytes are mostly read by sharers alone in their windows runs out of step as a whole, L2 merges none of its
  requests, and where its working set fits in L2 its DRAM reads are the in-step ones (:func:`delivery_waves`, the
  ``delivery`` bound; its ceiling :func:`h100lab.design.traffic.lrc_ceiling_tb_s` and its lonely-share threshold
  :func:`h100lab.design.traffic.fit_lonely_share`, both read off the L2 → SM counters, no time). A cooperative
  form's DRAM reads are the capacity estimate instead (:func:`_capacity_waves`,
  :func:`h100lab.design.traffic.capacity_reads`: its CTAs drifting apart, a k-slice surviving in L2 until its next
  sharer with probability ``exp(−X / C)``), at its own drift (:func:`h100lab.design.traffic.fit_form_drifts`, DRAM
  counters, no time: 0.029 with a wgmma group in flight, 0.004 without), charged at the rate a GEMM's tile reads
  reach (:func:`fit_tile_read`, 3.47 TB/s: every profiled launch's duration given its own bytes) — the in-flight
  128 × 128 form at 16384³ reads 3–5× the in-step bytes, −19 % without them, −3.8 % with them; registered at seven
  shapes, six never timed (:mod:`h100lab.validation.l08_reuse`: 34 and 33 of 35 within ±10 %, the same constants
  without the two readings 29 and 29). The drift is one number per form: which launch of a run loses more, and
  why a group in flight drifts faster (a hypothesis: its producer runs a stage shorter ahead), are not modelled;
* a wgmma reads each shared-memory operand byte once (:func:`h100lab.design.tiles.smem_bytes_per_clock`) and the
  shared-memory bound and the tensor-core bound slow each other as the memory bounds do (the smooth maximum)
  [limit: the DRAM-counter run's SM cycles (:func:`h100lab.validation.l08.cycle_rows`) say the forms it binds run
  the tensor-core bound in cycles at a lower clock — 128 × 128 at 8192³: 2.30 M cycles at 1489 MHz against 128 ×
  256's 2.34 M at 1561 — so at whole waves the bound stands in for a power limit at one fitted clock; that limit
  relaxing in a partial wave is the per-wave clock below; the other way to say it, the bound shared by a wave's
  active CTAs (:attr:`PerfParams.smem_shared`, :func:`h100lab.validation.l08.partial_wave_diagnosis`), is a
  hypothesis, not the model: against the model without the per-wave clock it brings every 1280 × 3840 × 8192 bf16
  record within ±10 % and costs three FP8 records];
* the tensor-core issue model is lesson 7's: one wgmma at a time per SM, in issue order; wgmma groups kept in
  flight on one accumulator overlap as that model lets them (lesson 7 reports where it misses on silicon);
* a consumer's mbarrier wait that finds its phase complete costs lesson 3's ``wait_hit_ns`` on its own path (the
  other consumer's wgmmas fill it), an arrive ``mbarrier_arrive_ns``; lesson 7's ``fence`` and ``loop`` cycles are
  the rest of a k-block's warp work; the producer keeps the ring full across tiles (a persistent CTA's next tile
  needs no fill);
* the epilogue's TMA store costs its source read (``tma_store_bytes_per_ns``, ``tma_store_read_ns``); a direct
  store costs ``bytes / direct_store_bytes_per_ns``; stmatrix, alpha/beta and the conversion are inside those;
* (the one-clock model; the model's clock is the form clock, below) the clock is one number per regime:
  ``tensor_ghz`` for launches measured back to back for less than
  ``long_run_ms``, ``throttled_ghz`` beyond (the H200 lowers its clock to hold its power limit; the measured
  16384³ runs drift from the 8192³ clock within one record). ``long_run_ms`` is the geometric mean of the
  longest sustained calibration run and the throttled calibration run;
* **the per-wave clock** (:attr:`PerfParams.wave_clock`, :func:`wave_clock_ratio`) [model]: the chip holds its
  power limit by its clock, and an SM's power is its clock × its activity — taken as the shared-memory bytes its
  k-block moves per SM clock at the model's period (SS wgmma operand reads and the TMA's stage writes: a proxy
  for the tensor cores' and shared memory's switching). A wave of ``active`` CTAs runs at ``min(cap, budget · SMs
  / (activity · active))`` relative to the whole wave's clock (never below it), × the regime's fitted clock. Its
  two constants come from the k-block traces' own clocks (cycles over globaltimer of the traced CTAs,
  :func:`wave_clock_rows`) of the two bf16 forms traced at 1280 × 3840 × 8192 — whole waves 1.59 / 1.53 GHz at the
  model's 111 / 120 B/clk (``budget`` ≈ 180 B/ns), partial waves of 18 / 36 CTAs 1.73 / 1.81 GHz (``cap`` their
  mean, ≈ 1.77 GHz) — the subset :data:`WAVE_CLOCK_CALIBRATION`, no timing record; every other constant is then
  fitted with it on (the fitted sustained clock falls 1.712 → 1.694 GHz: the calibration records' own partial last
  waves run faster). FP8 sits at the cap: its tensor cores idle ~40–50 % of its k-block, so its whole waves move
  77–94 B/clk, ``budget / activity`` is above ``cap`` already and a partial wave does not rise — as its traces
  read (1.70–1.72 GHz in the whole and the partial wave). Assumed: the budget is one number per chip (not per
  regime: the throttled 16384³ clock is its own fit), the activity proxy ranks forms as their power does, and
  the clock follows the active CTAs at once (no ramp between waves). Switching it off
  (:func:`h100lab.validation.l08.wave_clock_diagnosis`): held out 277 → 273 of 286 (capstone 86 → 84, FP8 125 →
  122, ablation 14 → 15 — the persistent ping-pong at 8192³ in the grouped order, +10.4 % with it, +9.4 % without:
  the lower refitted clock);
* FP8 (e4m3) with per-block scales: **what the k-block trace shows** (``data/l08/gemm_trace``, H200, both traced
  CTAs and both consumers alike): the producer runs 4,000–5,600 cycles ahead (every stage full; it waits on the
  empty barrier most of each k-block), a consumer's ``wait_group`` lasts about its own group's execution (the two
  consumers take turns on the tensor cores, half a k-block apart, without queueing behind each other), and the
  k-block period is one consumer's serial chain — full-barrier try_wait, the group's issue, its own wgmmas,
  release, scales, promotion, the scale loads — with the tensor cores idle for the rest (≈ 40–50 % of the 128 ×
  128 form's k-block). So FP8's k-block is bound by the consumer chain's CUDA-core parts, not by the tensor cores,
  the producer, TMA or shared memory. The chain in :func:`issue_timing`: the full-barrier try_wait and
  ``wgmma.fence`` as for bf16 (lesson 3, lesson 7: the trace agrees); the group's issue window
  ``fp8_issue_cycles`` (fence, warpgroup convergence, descriptors, wgmmas, commit — ~8× lesson 7's 4 cycles per
  wgmma; the group's first wgmma reaches the tensor cores only after the window's fixed part, as the trace's
  wait_group of about a whole group's execution after it says); the wgmmas, their results and the wait (lesson
  7); the promotion ``fp8_promote`` per tile N (≈ one FFMA per clock for 128 columns, ≈ 3 cycles per register for
  192 — measured, not explained: the 192-column form's promotion picks between two B scales per register); then
  the scale loads by ``scale_lead``. Lead 1: the next block's loads are issued right after the group
  (``fp8_scale_issue_cycles``, the trace's extra issue window over lead 2) and the loop-carried copies at the block's
  end wait for them, a latency after their issue — a time, not cycles [assumption] — that grows with the memory
  system's load: ``scale_load_ns + scale_load_ns_per_rate · R`` (:func:`scale_load_latency`) with ``R`` the wave's
  DRAM read rate, its bytes (:func:`scale_read_bytes`: the wave's distinct A and B panels, in step; when A and B
  fit in L2 only the panels no earlier wave read) over its mainloop, solved per wave with the period (a fixed
  point) [model: the scales are L2 hits queued behind the L2's fills; first order, linear in the load]. Its two
  constants are fitted on untraced 128 × 128 lead-1 TMA-store times of ``l08/gemm_trace_forms2`` at the least and
  most loaded shapes, 4096³ and 16384³, each at its trace's clock (the trace cannot time the wait itself: its
  timestamp of the next block's scales waits for them, and costs the lead-1 forms 9–22 % where the others pay
  4–8 %): ~207 ns with no DRAM reads (lesson 1's unloaded L2 hit, :func:`unloaded_l2_hit_ns`: ~142 ns — an L2 hit
  under the kernel's TMA traffic) + ~0.3 ns per B/ns, ~400 ns at 8192³. That subset was chosen among six on trace
  data only (:data:`SCALE_CANDIDATES`, :func:`h100lab.validation.l08.scale_calibration_choice`). The latency
  that reproduces each record (:func:`h100lab.validation.l08.scale_latency_by_shape`) is ~280 ns at 4096³, 320–345
  at the two-wave shapes, 340–370 at 8192³ and 375–405 at 16384³; the model has 4096³ (mostly later waves that
  read nothing new) and 16384³, but the in-step reads per k-block are the same at 8192³ as at 16384³, so it is
  ~10 % long at 8192³ (~410 ns) [limit: what makes 16384³ more loaded — the DRAM counters read 1.5–1.7× the
  in-step bytes there for bf16 — is not in the traffic estimate].
  Lead n ≥ 2 (``-DSCALE_LEAD``, a register ring): the ring's loads are issued on the chain after the promotion
  (``fp8_ring_issue_cycles``, measured) and their latency is hidden (first read n blocks later). So the ring moves
  the loads' cost rather than removing it: 128 × 128 (short promotion, load-bound at lead 1) gains, 128 × 192
  (the load hidden under its long promotion at lead 1) loses — as ``data/l08/gemm_bench_fp8_lead`` measured
  (:func:`h100lab.validation.l08.lead_diagnosis`). The trace's own cost per event (:func:`trace_overhead`, from its
  traced and untraced times) is taken out of every interval; BM 256 forms (two m64 blocks per consumer) pay the
  issue window, promotion and ring loads per block, lead 1 waiting for its loads once per k-block, and the issue loop
  steps them block by block, so the one in-order tensor-core queue takes each m64 block's group when it is issued
  (not a consumer's whole k-block at once, which had queued a block behind the other consumer's later one);
  ``scale_smem`` (scales with the stage): no loads. Where lead 1 first waits for its loads is read off the SASS of
  the kernel that ran (:attr:`Form.scale_copy`): at the block's end since 0a71f54, at the group's ``wait_group``
  (before the stage's release and the promotion) in the 128 × 128 forms of the first two FP8 runs
  (:data:`EARLY_SCALE_COPY`). A second trace (``data/l08/gemm_trace_forms``, held out, nothing fitted on
  it; :func:`h100lab.validation.l08.trace_rows`) ran the forms the first did not: the staggered 128 × 192 form's
  chain is longer than the plain one's (its named barriers, and wgmmas and promotions that now overlap the other
  consumer's) — of it the model has only the named barrier's pass (:attr:`Form.stagger`, lesson 3's ``bar.sync``),
  so it comes out ~9–12 % fast; 256 × 128 with the ring ~12 % slow and at lead 1 a
  few per cent fast: its first m64 block waits for its loads (as the code's per-block copy says), its second
  less — where the lead-1 wait sits is not resolved (per m64 block: every 256 × 128 lead-1 record ~11 % slow; per
  k-block, as here: ~6–9 % fast; with the blocks queued in issue order both 256 × 128 forms come out 1–9 % fast);
  the direct-store 128 × 128 form's epilogue takes ~3.5× the TMA store's. A third trace
  (``data/l08/gemm_trace_forms2``, held out; ``benchmarks/trace_gemm.py --untraced`` for the cluster pair) ran the
  current kernel's 128 × 128 forms at four shapes: its direct-store form is within ±10 % at each (the first runs'
  kernel, :data:`EARLY_SCALE_COPY`, was 8–9 % slower), a staggered 128 × 128 k-block is 70–90 cycles longer than
  the plain one's in the same run (the model charges the barrier's ~25), and the lead-1 128 × 128 form's k-block
  is shortest at 4096³ while lead 2's is the same at every shape: the latency of the lead-1 scale loads depends on
  the shape, the same in every run (:func:`h100lab.validation.l08.scale_latency_by_shape`) — the loaded latency
  above, with which the staggered 128 × 192 forms (−11..−12 % with one latency) come out −8..0 % without a change
  to the stagger. A fourth trace (``data/l08/gemm_trace_cluster``, held out: taken after the loaded latency was
  fitted) traced the FP8 cluster pair (``-DTRACE=1`` with ``CLUSTER 2``): its waited → released interval — both
  arrives, the remote one's ``release.cluster`` (SASS: ``MEMBAR.ALL.GPU``) — is 1030–1360 cycles against the plain
  form's 35, longest at 16384³, and the next block's scales are in registers right after its promotion (as in the
  plain form): the scale loads, issued ~900 ns before that, land during the fence — the overlap the model has
  (the fence after ``wait_group``, the copies' wait after the promotion), so what is left of the pair's error is the
  fence itself (``cluster_fence_ns``, fitted on a bf16 pair), which the trace inflates (the fence also waits for
  the trace's own stores: the trace costs the pair 20–41 %) and so cannot time. That run: 34 of 35 untraced times
  within ±10 % (one latency: 24); the pair at 16384³ keeps ~1.78 GHz where the plain forms fall to 1.5–1.6.
  The FP8 clock run (``data/l08/clock_under_load_fp8``) is predicted at its clock with these cycles;
* a CUDA-core kernel (step 1, ``naive``) is out of scope (:class:`NotModelled`): no tensor cores, no TMA.

**The form clock** (the model, :func:`calibrated`; against the one-clock model,
:func:`h100lab.validation.l08.form_clock_diagnosis`). Nsight Compute on every bf16 form at every shape
(``data/l08/gemm_ncu_forms``, :func:`h100lab.validation.l08.form_counter_rows`) shows the model right in time for
the wrong reasons: its cycles a median 12 % too many (the shared-memory bound, with every TMA-written byte taking a
bank cycle, caps forms whose tensor pipes silicon keeps 87–93 % busy) and its one fitted clock a median 4 % above
the clock each launch ran; and silicon's clock is a property of the form (8192³: ping-pong 1.66 GHz, ping-pong in
flight 1.49). The hypothesis: each wave at the clock its own activity gives it (:func:`form_clock_ratio`: ``1 / f =
c0 + c1 · a · active / SMs``, ``a`` its shared-memory bytes per clock over 128, capped at the partial-wave clock),
``c0`` and ``c1`` least squares on the counters' clocks at 4096³ and 8192³ (:func:`form_clock_constants`: the
counters alone, no time); the TMA's writes weighed ω in the shared-memory bound (:attr:`PerfParams.smem_write_weight`,
:func:`smem_write_weight_fit`: the weight whose cycles match those launches', a fixed point with the refitted time
constants: 0.45); no clock fitted on a time (the sustained records fit the direct stores alone, the throttled
record the throttled clock); the first tables timed as the kernel that runs now (:func:`todays_records`: their
five-process repeats — their 128 × 128 and ping-pong forms ran an older epilogue); its own reuse window, refitted
with its constants (:attr:`PerfParams.reuse_window`: 20 CTAs, the model's 24). On the committed data: every
Nsight Compute launch within ±10 % in time and in cycles (21 of them held out); every configuration of the kernel
A/B run's today's side; with the FP8 scale loads' two constants fitted on Nsight Compute's FP8 cycles at the same
shapes (:func:`_fit_scale_on_cycles`, ``data/l08/gemm_ncu_forms_fp8``) held out 276 of 286 against today's kernel
(the model: 274 there, 277 on the first tables as first recorded) — capstone 87 of 88, its miss the in-flight
128 × 128 form at 16384³, whose launches lose L2 reuse by a varying amount (``data/l08/gemm_l2_n128_a``/``_b``);
FP8 125 of 130 as the model; the steps 26 of 28: its window puts the row-major ping-pong at 4096³ +25 % (four
records, within since the delivery bound of a wave out of step, :func:`delivery_waves`; the order sweep at 8192³ cannot tell 20 from 24, 4096³ wants 24–28 — one window in CTAs does not carry
across shapes), though on the order sweep's held-out ping-pong records it has 39 of 53 within ±10 % (the model,
with its window: 27). A window shrinking as 1 / √K (the drift law, :func:`h100lab.design.traffic.window_at`) would
have fixed the 4096³ records, but was chosen after seeing the sweep; its predictions for five depths never run,
committed first, failed on silicon (``data/l08/gemm_orders_k``: 36 of 50, one window 35, the model 38). Where it
loses: its FP8 clock is right (median +0.5 % on the FP8 launches), its FP8 cycles are not (24 of 34 within ±10 %:
short at the small shapes, long at 8192³ — one latency linear in the wave's DRAM read rate does not follow the
shape), so the FP8 forms of the k-block traces at their clocks come out 72 of 81 against the
model's 79 (:func:`h100lab.validation.l08.form_clock_diagnosis`); it also puts the FP8 clock run's 128 × 192 form
at −13 % (the one clock: −9 %) and the throttled runs' clock at 1.35 GHz where nvidia-smi read 1.455 at 16384³ (the
one clock: within 3 %). It became the model on the prospective test below, these weak spots stated.

**The prospective test** (:data:`PROSPECTIVE_DATASETS`, :func:`h100lab.validation.l08.fresh_rows`). Every bf16 and
FP8 form at seven shapes no run had timed, predicted by the one-clock model (the model then; "the model" in the rest
of this paragraph) and by the form clock (then a hypothesis) and committed
(``benchmarks/predictions/l08_gemm_fresh.json``) before the H200 ran them in two processes: bf16 — the model 78 and 79
of 98 within ±10 % (its misses nearly all slow, its 128 × 128 and ping-pong forms: the fitted clock's counterweight
to its excess cycles does not carry to new shapes), the hypothesis 97 and 95; FP8 — the model 96 and 96 of 112,
the hypothesis 94 and 95, both missing the lead-1 128 × 128 forms where B (re-read by every group of tile rows)
fits in L2: there silicon's lead 1 is as fast as lead 2 (the loads' latency hidden), where the model charges ~20 %
everywhere (:func:`h100lab.validation.l08.fresh_residency_rows`; [limit: the loaded latency's DRAM rate counts
panels in step, with no L2 capacity]). A capacity rule read off that — the wave's panels less those still in an
LRU L2 of the device's 60 MiB, nothing fitted — was registered with both models for a second round of seven more
shapes, chosen to put B in and out of L2, and refuted there: the B-resident tall shapes ran 10–20 % slower than
it predicted and a shape whose B just spills faster (FP8 93 and 93 of 112 with it, 94 and 95 without, as the
model now is); so the model keeps the in-step count. The second round's bf16 records: the model 86 and 88 of 98,
the hypothesis 98 and 98. These runs are reported on their own, not among :func:`timing_datasets`. **Round 3**
(:data:`h100lab.validation.l08.FRESH3_SHAPES`, registered with the form clock as the model and the working-set gate
on its scale loads, :data:`SCALE_WORKING_SET_MB`): bf16 98 and 96 of 98, FP8 106 and 103 of 112 (403 of 420, 96 %;
the one-clock model, registered beside it, 92, 90, 98, 98); the FP8 misses mostly the fenced cluster pair, 10–12 %
slow. **The FP8 pair's fence** (:mod:`h100lab.validation.l08_fence`): its release follows ``wait_group 0`` ahead of
the promotion, and its ``MEMBAR.ALL.GPU`` / ``ERRBAR`` wait for the scale loads in flight (the SASS); two readings,
one constant each on one FP8 pair record, registered at six new shapes with the ring pair
(``fp8_cooperative_tmastore_cluster2_lead2``) to tell them apart — "overlap" picked by the rule, 20 of 24 pair records,
neither holding the ring pair (±10 % either way); then the split reading read off that run (:data:`FENCE_READINGS`,
:data:`FP8_FENCE_SPLIT_CALIBRATION`; 154 + 358 ns, within 1 % of the bf16 pair's 515), registered at six more:
24 of 24 (overlap 18). The split reading is the model's (:data:`FP8_FENCE_READING`). Refitted after the FP8 issue
window (:func:`_fit_scale_on_cycles`) the parts are ~434 + 68 ns: their sum holds, their division is not firm.

:func:`gap_to_peak` splits the predicted time into the datasheet peak time plus: the clock (the sustained clock
vs the datasheet's tensor clock), wave quantization (SMs idle in a partial last wave, tile padding), tensor-core
issue (wgmma overheads, a lone warpgroup's waits, FP8 promotion), the memory bounds' excess over the tensor-core
bound (TMA / L2 → SM, HBM for L2 misses, ring latency — the smooth maximum's excess shared in proportion to each
bound's k-th power), the exposed epilogue and the fill.

Calibration: :func:`calibrate` (the subset :func:`is_calibration` names: three variants at 4096³ and 8192³ and
one record at 16384³, one cluster record; and, for FP8, the k-block trace run :data:`TRACE_DATASET` and two
untraced times of a later trace run, :data:`SCALE_CALIBRATION`); held-out agreement: :mod:`h100lab.validation.l08`.

How the model got here (so the held-out figures can be judged): its first form had no L2 share and calibrated on
the two cooperative variants only; lesson 3's refit of the memory model then raised one SM's TMA rate, under which
the ping-pong variants (the most bytes per FLOP) came out too fast — the L2 share, calibrated on
``pingpong_inflight``, was added for that, and the hold of a stage was changed from "two periods with a group in
flight" to "the stage's own wgmmas" after the first held-out report showed the cooperative variant with a group in
flight predicted slower than without, where silicon has them equal. The later runs (steps, FP8, clusters, fused
epilogues, a re-run of four variants) were first predicted with the model as it stood (for the variants never
measured before, the predictions were written down before their data came); the cluster pairs missed by
about 30-55 %, and the run that dropped the ``.release.cluster`` fence (``_ctascope``, matched by the model as it
stood) pointed at the fence: ``Form.cluster_fence`` and its one constant, fitted on one record, were added then.
The step kernels 2–3 were then 21–35 % too slow: the issue loop let the TMA-issuing thread hold up both
warpgroups, and the ring's round trip counted the re-arm and TMA issue twice, charged a try_wait hit on top of the
wake, and moved a lone stage at the L2 share — fixed as above, no constant. The shared-memory bound (a spec value)
came next: the ping-pong and 128-column forms and FP8 move 160 B/clk at the tensor rate, and with it the fitted L2
share no longer improves any held-out figure, so it is no longer fitted. The FP8 form was then 1 of 95 within ±10 %
(about a quarter too fast); the scale loads on each consumer's path (read in the SASS, above) came next, with one
constant fitted on one FP8 record (:data:`SCALE_CALIBRATION`) and every other FP8 record held out (two thirds of
the lead-1 records within ±10 % since; the 128 × 128 forms of the later FP8 runs, which ran faster than the first
run's, and the FP8 cluster pairs come out too slow, 128 × 192 too fast at the lower clocks) — and the scale-ring
run, its clean held-out test, then showed the load is not the cost. The k-block trace (``-DTRACE=1``) then showed
what is: the consumer chain's CUDA-core parts (the group's issue window, the promotion, the loads' issue), each
several times what the model had charged, while the fitted load had stood in for all of them; the chain now comes
from the trace and the load's latency from one record of the trace run, and every throughput record of every FP8
run is held out (74 → 104 of 130 within ±10 %, worst 25 → 17 %; the scale-ring forms 0 → 15 of 20). Two
structural corrections without a constant followed: the first two FP8 runs' kernel waited for the lead-1 scales
early (:data:`EARLY_SCALE_COPY`, read off that kernel's SASS: their direct-store misses, 8 of them, gone), and the
two m64 blocks of a 256 × 128 consumer reach the tensor-core queue in issue order (its ring form +12–17 % →
−2–5 %): 104 → 117 of 130, worst 17 → 14 %, and the stagger's named-barrier pass (lesson 3's constant) 122 of
130. The scale latency then became loaded by the wave's DRAM reads (two constants fitted on two untraced times of
the third trace run, the subset chosen on trace data only): still 122 of 130, worst 14 → 12 %, median 5.0 → 3.7 %
(the 4096³ lead-1, staggered 128 × 192 and 16384³ cluster-pair misses gone; the first runs' early-copy
direct-store form at the small shapes now 10–12 % fast), the fourth trace 34 of 35 held out. The ping-pong form in
row-major order was then
20–53 % too fast; the DRAM traffic of the tile order (a reuse window for ping-pong forms, one constant fitted on the
order sweep's ping-pong records at 8192³, :mod:`h100lab.design.traffic`) brought the steps to 28/28 and the
ablation to 15/16 held out (capstone and clusters unchanged). The k-block traces then measured the partial
wave's clock (the 128 × 128 form's last 36 CTAs 1.81 GHz against 1.53 in its whole waves; FP8 1.70–1.72 in both):
the per-wave clock (two constants from those traces, every other constant refitted with it) became the model —
held out 273 → 277 of 286 (capstone 84 → 86: the two-wave shape's 128 × 128 misses but one gone; FP8 122 → 125),
at the cost of one ablation record (15 → 14: the persistent ping-pong at 8192³ in the grouped order, +9.4 →
+10.4 %, the lower refitted clock). No constant was ever fitted on a held-out record.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Iterable, NamedTuple, Sequence

__all__ = ["NotModelled", "Form", "form", "step_form", "PerfParams", "IssueTiming", "issue_timing", "Wave",
           "Prediction", "predict", "predict_record", "issue_events", "Gap", "gap_to_peak", "GAP_PARTS", "DATASETS", "TIME_KINDS",
           "timing_datasets", "PROSPECTIVE_DATASETS", "load_records", "timing_records_of", "record_form",
           "record_label", "CALIBRATION", "THROTTLED_CALIBRATION",
           "CLUSTER_CALIBRATION", "FP8_FENCE_CALIBRATION", "FP8_FENCE_SPLIT_CALIBRATION", "FP8_FENCE_READING",
           "FENCE_READINGS", "fp8_fence_calibration", "SCALE_CALIBRATION", "SCALE_CANDIDATES", "EARLY_SCALE_COPY", "scale_records",
           "TRACE_DATASET", "TRACE_SHAPE", "trace_constants", "trace_overhead", "fp8_promote_block",
           "calibration_part", "is_calibration", "calibrate", "calibrated", "run_ms", "unloaded_l2_hit_ns",
           "scale_load_latency", "scale_read_bytes", "wave_working_sets", "delivery_waves",
           "scale_ws_factor", "SCALE_WORKING_SET_MB",
           "wave_clock_ratio", "at_clock",
           "WAVE_CLOCK_CALIBRATION", "wave_clock_rows", "wave_clock_constants", "form_clock_ratio",
           "FORM_CLOCK_DATASET", "FORM_CLOCK_SHAPES", "SMEM_WRITE_WEIGHTS", "form_clock_constants",
           "smem_write_weight_fit", "TODAY_TABLES", "todays_records", "launch_mcycles", "FORM_CLOCK_FP8_DATASET",
           "form_counter_means"]

#: the datasets the model is calibrated on (``benchmarks/bench_gemm.py``: the capstone's variants next to cuBLAS);
#: every other ``data/l08`` timing dataset is held out entirely (:func:`timing_datasets`)
DATASETS = ("l08/gemm_bench", "l08/gemm_bench_tmastore")

#: the documented calibration subset at the sustained clock: (dataset, variant, (M, N, K)) with group 8, raster M —
#: the first cooperative form (direct-store epilogue), the finished one (TMA-store epilogue, a group in flight) and
#: ping-pong with a group in flight (the most bytes per FLOP: 64 × 256 tiles; what sets the L2 share when it is
#: fitted, ``calibrate(fit_l2=True)``; with the shared-memory bound it is one more record of the clock) at the two
#: square shapes below the power limit
CALIBRATION = tuple((d, v, s) for d, v in (("l08/gemm_bench", "cooperative"),
                                           ("l08/gemm_bench_tmastore", "cooperative_inflight_tmastore"),
                                           ("l08/gemm_bench", "pingpong_inflight"))
                    for s in ((4096, 4096, 4096), (8192, 8192, 8192)))
#: the one record the throttled clock is fitted on: (dataset, variant, (M, N, K)), group 8, raster along M
THROTTLED_CALIBRATION = (("l08/gemm_bench", "cooperative", (16384, 16384, 16384)),)
#: a documented split for a mechanism the first runs did not have: the cost of the cluster pair's
#: ``mbarrier.arrive.release.cluster`` in the k-block loop (``cluster_fence_ns``), fitted on this one record; every
#: other cluster record (the 128-column pair, the TMA-store pair, the other shapes, FP8 pairs) is held out
CLUSTER_CALIBRATION = (("l08/gemm_bench_cluster2", "cooperative_inflight_cluster2", (8192, 8192, 8192)),)
#: the FP8 pair's fence (``cluster_fence_fp8_ns``): its release follows ``wait_group 0`` ahead of the promotion and
#: its barrier waits for the scale loads in flight, which the bf16 pair has none of — so its own constant, fitted on
#: this one record (the form clock's, :func:`_fit_fp8_fence`); every other FP8 pair record is held out
FP8_FENCE_CALIBRATION = (("l08/gemm_bench_fp8", "fp8_cooperative_tmastore_cluster2", (8192, 8192, 8192)),)
#: the reading of that fence against the loads in flight (:data:`FENCE_READINGS`) that the tests registered in
#: :mod:`h100lab.validation.l08_fence` chose: round 1 "overlap" over "after" (both held every FP8 pair record
#: committed before it; neither the ring pair), round 2 "split" over "overlap" (24 of 24 pair records within ±10 %
#: against 18)
FP8_FENCE_READING = "split"
#: the readings of the FP8 pair's release, ``max(waited + F₁, loads landed) + F₂``
#: (``cluster_fence_fp8_ns`` = F₁, ``cluster_fence_fp8_after_ns`` = F₂): ``"overlap"`` — the barrier's round trip
#: runs under the loads (F₂ = 0); ``"after"`` — it waits for them, then pays its own (F₁ = 0); ``"split"`` — part
#: of it under them, part after (both; two records: :data:`FP8_FENCE_SPLIT_CALIBRATION`)
FENCE_READINGS = ("overlap", "after", "split")
#: the two records the split reading is fitted on: both fenced pairs (lead 1, the ring) at one shape of the fence
#: test's first process (``l08/gemm_fence``); every other record of that run and of every other is held out
FP8_FENCE_SPLIT_CALIBRATION = tuple(("l08/gemm_fence", v, (6144, 10240, 8192)) for v in (
    "fp8_cooperative_tmastore_cluster2", "fp8_cooperative_tmastore_cluster2_lead2"))


def fp8_fence_calibration(reading: str = FP8_FENCE_READING) -> tuple:
    """The records (dataset, variant, (M, N, K)) a reading of the FP8 pair's fence (:data:`FENCE_READINGS`) is
    fitted on: :data:`FP8_FENCE_SPLIT_CALIBRATION` for the split, else :data:`FP8_FENCE_CALIBRATION`."""
    if reading not in FENCE_READINGS:
        raise ValueError(f"fence reading {reading!r}: one of {FENCE_READINGS}")
    return FP8_FENCE_SPLIT_CALIBRATION if reading == "split" else FP8_FENCE_CALIBRATION
#: the k-block trace (``benchmarks/trace_gemm.py``, ``l08_gemm.cu -DTRACE=1``): the FP8 consumer's chain
#: (:func:`trace_constants`) is read off its FP8 records at :data:`TRACE_SHAPE`; its other records (the two-wave
#: shape) and every throughput record of every FP8 run are held out
TRACE_DATASET = "l08/gemm_trace"
TRACE_SHAPE = (8192, 8192, 8192)
#: the records the lead-1 scale loads' latency is fitted on (:func:`scale_load_latency`: ``scale_load_ns`` +
#: ``scale_load_ns_per_rate`` × the wave's DRAM read rate; from the loads' issue after the group to the end-of-block
#: copies that wait for them), with the trace's chain constants in place: untraced times of the 128 × 128 lead-1
#: TMA-store form in a k-block trace run, each at the SM clock its trace read (the trace itself cannot time the wait:
#: its timestamp of the next block's scales waits for them, which costs that form more than the others) — of
#: ``l08/gemm_trace_forms2`` (one session, the current kernel) at the least and the most loaded shapes, 4096³ (A and
#: B in L2: later waves read little from DRAM) and 16384³. Chosen on trace data only (:data:`SCALE_CANDIDATES`:
#: the subset whose fit times the other FP8 records of the three trace runs best, 43 of 44 within ±10 %); no
#: throughput record is in it or chose it
SCALE_CALIBRATION = (("l08/gemm_trace_forms2", "fp8_cooperative_tmastore", (4096, 4096, 4096)),
                     ("l08/gemm_trace_forms2", "fp8_cooperative_tmastore", (16384, 16384, 16384)))
#: the calibration subsets tried for the loaded scale latency, each (name, subset) — the fit on each subset, then
#: the other FP8 records of the three trace runs (every traced form, untraced time at its clock) counted within
#: ±10 % (:func:`h100lab.validation.l08.scale_calibration_choice`): one latency at 8192³ (the earlier model) 40/45,
#: the first trace's two shapes 38/44, forms2's 4096³ + 8192³ 34/44, 4096³ + 16384³ 43/44 (chosen), its four
#: shapes 38/42, every trace's 128 × 128 lead-1 record 33/38
SCALE_CANDIDATES = (
    ("one latency: gemm_trace 8192³", ((TRACE_DATASET, "fp8_cooperative_tmastore", TRACE_SHAPE),)),
    ("gemm_trace 8192³ + 1280×3840×8192", ((TRACE_DATASET, "fp8_cooperative_tmastore", TRACE_SHAPE),
                                           (TRACE_DATASET, "fp8_cooperative_tmastore", (1280, 3840, 8192)))),
    ("forms2 4096³ + 8192³", (("l08/gemm_trace_forms2", "fp8_cooperative_tmastore", (4096, 4096, 4096)),
                              ("l08/gemm_trace_forms2", "fp8_cooperative_tmastore", TRACE_SHAPE))),
    ("forms2 4096³ + 16384³", SCALE_CALIBRATION),
    ("forms2, four shapes", tuple(("l08/gemm_trace_forms2", "fp8_cooperative_tmastore", s)
                                  for s in ((4096,) * 3, TRACE_SHAPE, (1408, 3072, 8192), (16384,) * 3))),
    ("every trace's 128 × 128 lead 1", tuple((d, "fp8_cooperative_tmastore", s) for d, ss in (
        (TRACE_DATASET, (TRACE_SHAPE, (1280, 3840, 8192))), ("l08/gemm_trace_forms", (TRACE_SHAPE, (1280, 3840, 8192))),
        ("l08/gemm_trace_forms2", ((4096,) * 3, TRACE_SHAPE, (1408, 3072, 8192), (16384,) * 3))) for s in ss)),
)


class NotModelled(ValueError):
    """A kernel outside the model's scope (say which and why)."""


# ------------------------------------------------------------------------------------------------
# what the model needs to know of a kernel

#: the FP8 runs timed with the kernel as it was before 0a71f54 (their data was committed before it: 02:27 and 02:31
#: against 02:43 on 2026-12-02), and the lead-1 forms whose loop waited for the next block's scales early there:
#: NVRTC's cubin of ``l08_gemm.cu`` at every commit that run could have used (``gemm_bench_fp8``: cdfd596 or 210fd29,
#: its variant list predating STAGGER; ``gemm_bench_fp8_stagger``: 1046a77 — 636b2c8 changed comments only),
#: disassembled (nvdisasm 13): the first loop-carried copy of a scale (``IMAD.MOV``) sits at the group's
#: ``WARPGROUP.DEPBAR`` (cdfd596: just before it; 210fd29 / 1046a77: 4 instructions after it), before the stage's
#: release (``SYNCS.ARRIVE``) and the promotion's first FFMA — for the 128 × 128 direct-store and TMA-store forms.
#: The staggered forms (1046a77) copy after the promotion, as every form does since 0a71f54; the cluster pair differs
#: between cdfd596 (early) and 210fd29 (after the promotion), so which one ``gemm_bench_fp8`` ran is not known: it
#: keeps the current placement. :attr:`Form.scale_copy` ``"wait"`` for these (dataset, variant) records
EARLY_SCALE_COPY = {"l08/gemm_bench_fp8": ("fp8_cooperative", "fp8_cooperative_tmastore"),
                    "l08/gemm_bench_fp8_stagger": ("fp8_cooperative", "fp8_cooperative_tmastore")}

_K_INSTR = {"bf16": 16, "f16": 16, "e4m3": 32, "e5m2": 32}
_ELEM = {"bf16": 2, "f16": 2, "e4m3": 1, "e5m2": 1}


@dataclass(frozen=True)
class Form:
    """A GEMM kernel as the time model sees it: the CTA tile ``bm × bn`` of C and ``bk`` K-elements per ring stage
    of ``stages``; A/B element type ``atype``; ``consumers`` math warpgroups; ``pingpong`` (the consumers take
    alternate tiles, their mainloops ordered: one issues at a time) or cooperative (they split the tile's rows and
    issue together); ``inflight`` (one wgmma group kept in flight); ``specialized`` (a producer warpgroup issues
    the TMA; else a consumer thread does); ``epilogue`` ``"direct"`` or ``"tma"``; ``cluster`` 1 or 2 (B multicast
    to a CTA pair); ``schedule`` ``"persistent"`` (min(SMs, tiles) CTAs walk the grouped order), ``"tiles"`` (one
    tile per CTA) or ``"pairs"`` (two tiles per CTA, one per ping-pong consumer); ``promote`` (FP8 two-level
    accumulation once per k-block); ``out_bytes`` per element of C; ``cta_sync`` (every k-block ends in a
    ``__syncthreads`` of all warpgroups before its stage is refilled: the ring kernels without a producer);
    ``overlap`` (default True: the cooperative consumers' k-block loops overlap on the tensor cores, one issuing
    while the other waits; False — a hypothesis for diagnosis, :func:`h100lab.validation.l08.serial_diagnosis` —
    a consumer issues only after the other's previous k-block is complete); ``cluster_fence`` (a cluster pair whose
    consumers release a stage to the peer CTA with ``mbarrier.arrive.release.cluster``: the release orders the
    warp's earlier memory accesses at cluster scope, so it waits for the warp's wgmmas still in flight — they read
    shared memory — and costs lesson 3's ``cluster_arrive_release_ns``); FP8 only: ``scale_lead`` (the consumers
    load a k-block's scales with ``ld.global`` this many k-blocks ahead: 1 — issued after the previous block's
    wgmmas — in the kernels of every committed FP8 run), ``scale_smem`` (the scales come through shared memory
    with the stage: no global load in the consumer's loop) and ``scale_copy`` (scale lead 1: where the consumer
    first waits for the next block's loads — ``"end"``: the loop-carried copies after the promotion, as ``l08_gemm.cu``
    compiles since 0a71f54; ``"wait"``: a copy at the group's ``wait_group``, before the stage's release and the
    promotion, as the kernel of the first two FP8 runs compiled — :data:`EARLY_SCALE_COPY`); ``stagger``
    (``-DSTAGGER=1``: before its group a consumer passes a named barrier of both consumers' 8 warps that the other
    consumer arrives at after issuing its own group — consumer 0's block j after consumer 1's block j − 1, consumer
    1's after consumer 0's block j — paying lesson 3's ``bar.sync`` release, ``bar_sync_ns`` + 8 ·
    ``bar_sync_per_warp_ns``, even when the other's arrival is long past [assumption])."""

    name: str
    bm: int
    bn: int
    bk: int
    stages: int
    atype: str = "bf16"
    consumers: int = 2
    pingpong: bool = False
    inflight: bool = False
    specialized: bool = True
    epilogue: str = "direct"
    cluster: int = 1
    schedule: str = "persistent"
    promote: bool = False
    out_bytes: int = 2
    cta_sync: bool = False
    overlap: bool = True
    cluster_fence: bool = False
    scale_lead: int = 1
    scale_smem: bool = False
    scale_copy: str = "end"
    stagger: bool = False

    def __post_init__(self):
        if self.atype not in _K_INSTR:
            raise NotModelled(f"A/B type {self.atype!r}: the model knows {sorted(_K_INSTR)}")
        if self.epilogue not in ("direct", "tma"):
            raise ValueError(f"epilogue {self.epilogue!r}: 'direct' or 'tma'")
        if self.schedule not in ("persistent", "tiles", "pairs"):
            raise ValueError(f"schedule {self.schedule!r}: 'persistent', 'tiles' or 'pairs'")
        if self.cluster not in (1, 2):
            raise ValueError(f"cluster {self.cluster}: 1 or 2")
        if min(self.bm, self.bn, self.bk, self.stages, self.consumers) < 1:
            raise ValueError("tile extents, stages and consumers are >= 1")
        if self.scale_lead < 1:
            raise ValueError(f"scale_lead {self.scale_lead}: >= 1 (k-blocks ahead)")
        if self.scale_copy not in ("end", "wait"):
            raise ValueError(f"scale_copy {self.scale_copy!r}: 'end' or 'wait'")
        if self.wg_rows % 64 or self.bk % _K_INSTR[self.atype]:
            raise ValueError(f"{self.name}: a warpgroup's rows ({self.wg_rows}) are a multiple of the wgmma M = 64 "
                             f"and bk ({self.bk}) a multiple of the wgmma K ({_K_INSTR[self.atype]})")

    @property
    def elem_bytes(self) -> int:
        return _ELEM[self.atype]

    @property
    def wg_rows(self) -> int:
        """Rows of C one consumer warpgroup owns per tile: bm (ping-pong) or bm / consumers (cooperative)."""
        return self.bm if self.pingpong else self.bm // self.consumers

    @property
    def issuers(self) -> int:
        """Warpgroups issuing wgmmas into the tensor cores at the same time: 1 (ping-pong) or ``consumers``."""
        return 1 if self.pingpong else self.consumers

    @property
    def wgmmas_per_group(self) -> int:
        """wgmmas one consumer issues per k-block: (its rows / 64) · (bk / wgmma K), each m64 × bn."""
        return (self.wg_rows // 64) * (self.bk // _K_INSTR[self.atype])

    @property
    def tile_rows(self) -> int:
        """Rows of one unit of tensor-core work: a consumer's tile (ping-pong) or the CTA tile (cooperative)."""
        return self.bm

    @property
    def macs_per_kblock(self) -> int:
        """Multiply-adds of one k-block of one tile: bm · bn · bk."""
        return self.bm * self.bn * self.bk

    @property
    def tma_bytes(self) -> int:
        """Bytes one CTA's TMA unit loads per k-block: its A tile and its share of the B tile (half with a
        cluster of two: it multicasts that half to both CTAs)."""
        return (self.bm + self.bn // self.cluster) * self.bk * self.elem_bytes

    @property
    def stage_bytes(self) -> int:
        """Bytes a ring stage holds (what lands in this CTA's shared memory per k-block)."""
        return (self.bm + self.bn) * self.bk * self.elem_bytes

    @property
    def smem(self):
        """The shared-memory traffic of this tile's mainloop, :func:`h100lab.design.tiles.smem_bytes_per_clock`
        (its SS wgmmas' operand reads — A once, B once per 64 rows of the tile — and the TMA's writes of a stage,
        all of B multicast or not, per ``bk`` elements of K; its ``limit``: 32 banks × 4 B per clock)."""
        from .tiles import smem_bytes_per_clock
        return smem_bytes_per_clock(self.atype, self.bm, self.bn, bk_bytes=self.bk * self.elem_bytes)

    @property
    def smem_bytes(self) -> float:
        """Shared-memory bytes one k-block of one CTA moves (:attr:`smem`: bytes per clock at the tensor core's
        dense rate × that rate's cycles per k-block)."""
        s = self.smem
        return s.total * s.tensor_cycles

    @property
    def c_bytes(self) -> int:
        """Bytes of C one tile writes."""
        return self.bm * self.bn * self.out_bytes

    @property
    def promote_cycles(self) -> float:
        """FP8 promotion per k-block and warpgroup: one FFMA per accumulator register of a thread (m/64 · n/2),
        one instruction per clock per warp scheduler ([model]); 0 without promotion."""
        return float((self.wg_rows // 64) * self.bn // 2) if self.promote else 0.0


def form(v, schedule: str = "persistent") -> Form:
    """The :class:`Form` of a capstone variant (:class:`h100lab.design.capstone.Variant` or its name): cooperative
    or ping-pong, its tile, stages, ``inflight``, ``tma_store``, ``cluster`` (with the cluster-scope release unless
    ``remote_cta_scope``), element type (e4m3 variants promote per k-block), FP8's ``scale_lead`` / ``scale_smem``
    and ``stagger`` (the FP8 consumers taking turns to issue through named barriers: :attr:`Form.stagger`)."""
    from . import capstone as cap

    if isinstance(v, str):
        v = cap.variant(v) if hasattr(cap, "variant") else cap.VARIANTS[v]
    atype = getattr(v, "dtype", "bf16")
    return Form(v.name, v.bm, v.bn, v.bk, v.stages, atype=atype, consumers=2, pingpong=v.pingpong,
                inflight=v.inflight, specialized=True, epilogue="tma" if v.tma_store else "direct", cluster=v.cluster,
                schedule=schedule, promote=atype != "bf16",
                cluster_fence=v.cluster > 1 and not getattr(v, "remote_cta_scope", False),
                scale_lead=int(getattr(v, "scale_lead", 1)), scale_smem=bool(getattr(v, "scale_smem", False)),
                stagger=bool(getattr(v, "stagger", False)) and atype != "bf16")


def step_form(s) -> Form:
    """The :class:`Form` of a step of :mod:`h100lab.design.steps` (its number, name or Step): steps 2–3 are the
    ring kernels without a producer warpgroup (``l08_steps.cu``: two computing warpgroups, 1 or 4 stages, an elected
    thread issuing the loads, a ``__syncthreads`` after every k-block, one tile per CTA — one CTA per SM: 256
    threads × the 128 accumulator registers and more each fill over half the register file — direct stores);
    steps 4–7 capstone variants with the step's schedule. Step 1 (CUDA cores) raises :class:`NotModelled`."""
    from . import steps

    s = steps.step(s)
    if s.schedule == "naive":
        raise NotModelled(f"step {s.number} ({s.name}) runs on the CUDA cores from global memory: outside a model of "
                          "tensor cores fed by TMA")
    if s.variant:
        return replace(form(s.capstone, schedule=s.schedule), name=s.name)
    t = steps.RING_TILE
    return Form(s.name, t.bm, t.bn, t.bk, s.stages, consumers=2, pingpong=False, inflight=False, specialized=False,
                epilogue="direct", schedule="tiles", cta_sync=True)


# ------------------------------------------------------------------------------------------------
# parameters

@dataclass(frozen=True)
class PerfParams:
    """The model's constants: ``tensor_ghz`` (sustained tensor clock), ``throttled_ghz`` (after ``long_run_ms`` of
    back-to-back launches), ``direct_store_bytes_per_ns`` (one SM's direct epilogue stores), ``l2_bytes_per_ns``
    (L2's delivery to a wave's SMs; 0: not binding), ``cluster_fence_ns`` (a cluster pair's release.cluster arrive
    in the k-block loop; 0: lesson 3's unloaded ``cluster_arrive_release_ns``), ``scale_load_ns`` (an FP8 consumer's
    ``ld.global`` of a k-block's scales: from its issue to the end-of-block copies that wait for it; 0: none) and
    ``scale_load_ns_per_rate`` (its growth with the wave's DRAM read rate, ns per B/ns: the latency is
    ``scale_load_ns + scale_load_ns_per_rate · R``, :func:`scale_load_latency`; 0: one latency at every load), the
    FP8 consumer's chain as the k-block trace measured it (``data/l08/gemm_trace``, :func:`trace_constants`; 0 or
    empty: lesson 7's issue and one FFMA per clock): ``fp8_issue_cycles`` (a group's ``wgmma.fence``, wgmmas and
    ``commit_group``), ``fp8_scale_issue_cycles`` (scale lead 1: the next block's ``ld.global`` issued after the
    group), ``fp8_ring_issue_cycles`` (scale lead ≥ 2: the ring's loads issued after the promotion), ``fp8_promote``
    ((tile N, cycles of one m64 block's promotion) pairs), the lesson-7 wgmma constants
    ``wgmma`` (:class:`~h100lab.tensorcore.timing.WgmmaTiming`), the lesson-3/5 copy table ``timing`` (memory
    model 2) and ``source`` (what each was fitted on). ``smem_shared`` (default False: a hypothesis under test,
    :func:`h100lab.validation.l08.partial_wave_diagnosis`): the shared-memory bound taken as a chip-wide budget the
    active CTAs of a wave share — ``T_s · active / SMs`` — rather than a per-SM bank limit [assumption, from the
    DRAM-counter run's cycle counts, :func:`h100lab.validation.l08.cycle_rows`: the forms it binds run the
    tensor-core bound in SM cycles (``cooperative_n128`` at 8192³: 2.30 M cycles, fewer than ``cooperative``'s
    2.34 M) and lose their time to a lower clock (1489 against 1561 MHz) — a power limit, which a partial wave
    relieves]. ``wave_clock`` (``budget``, ``cap_ghz``; the model's, :func:`calibrated`, has it; the dataclass's
    default () is off — every wave at the fitted clock, :func:`h100lab.validation.l08.wave_clock_diagnosis`): each
    wave at the clock the power limit gives its active CTAs (:func:`wave_clock_ratio`; the two constants from the
    k-block traces' clocks, :func:`wave_clock_constants`) × the fitted clock. ``form_clock`` (``c0``, ``c1``; the
    dataclass's default () is off — the model's, :func:`calibrated`, has it;
    :func:`h100lab.validation.l08.form_clock_diagnosis`):
    every wave at the clock its own activity gives it, ``1 / f = c0 + c1 · a · active / SMs`` (GHz⁻¹; ``a``: the
    shared-memory bytes its k-block moves per SM clock over 128, all of them; capped at ``wave_clock``'s cap), in
    place of one fitted clock (:func:`form_clock_constants`); ``throttled_ghz`` is then the throttled runs' clock as
    a fraction of it. ``smem_write_weight`` (ω, default 1): the share of the TMA's stage writes that takes bank
    cycles from the wgmmas' reads in the shared-memory bound (:func:`smem_write_weight_fit`). ``scale_ws_gate``
    (``lo``, ``hi`` MB; default () off — the model's, :func:`calibrated`, has :data:`SCALE_WORKING_SET_MB`): the FP8
    scale loads' latency loaded only by the DRAM reads of a wave whose working set is large
    (:func:`scale_ws_factor`). ``reuse_window`` (CTAs; default None, in step — what every fit runs with): the
    ping-pong forms' L2 reuse window of
    :mod:`h100lab.design.traffic`, fitted after the other constants with them (:func:`_with_window`), at
    K = :data:`h100lab.design.traffic.WINDOW_K` (where its calibration records are); ``window_k_exponent`` (default
    0: the same window at every K): the window at another K is ``reuse_window · (WINDOW_K / K) ** exponent``
    (:func:`h100lab.design.traffic.window_at`; 0.5: the drift law, refuted on fresh depths —
    :func:`h100lab.validation.l08.drift_law_rows`). ``delivery_floor_tb_s`` (TB/s; default 0, off — the model's,
    :func:`calibrated`, has :func:`h100lab.design.traffic.lrc_ceiling_tb_s`, set before its window is fitted): the
    L2 → SM delivery ceiling of a ping-pong wave out of step as a whole (:func:`delivery_waves`) — its k-block takes
    at least its requested bytes at this rate, and its DRAM reads are the in-step ones where its working set fits in
    L2; ``lonely_share``: the lonely share over which a wave is out of step (the model's:
    :func:`h100lab.design.traffic.fit_lonely_share`); ``delivery_pairs`` (default True; False: the bound as the
    first delivery round registered it, ``l08_gemm_orders_delivery.json``): a ``pairs`` wave's working set is its
    largest in-flight set's, and a delivery-bound wave of a launch of one or two tiles per CTA hides its CTAs' fills
    and epilogues (:func:`delivery_waves`, :func:`predict`). ``tile_read_tb_s`` (TB/s; default 0, off — the model's,
    :func:`calibrated`, has :func:`fit_tile_read`'s): the DRAM bound of a persistent launch of a cooperative bf16 form
    (not ping-pong; not FP8, whose scale loads' latency is fitted loaded by the in-step bytes) charges the bytes of :func:`h100lab.design.traffic.capacity_reads` at this rate instead of the
    in-step bytes at lesson 5's read-stream ceiling; ``form_drifts`` ((variant, drift) pairs,
    :func:`h100lab.design.traffic.calibrated_form_drifts`) the drift of each form measured so, ``capacity_drift`` the
    drift of any other (:func:`h100lab.design.traffic.calibrated_drift`) — :func:`_capacity_waves`; ``capacity_blocks``
    (default 8): the launch's waves in that many runs of consecutive waves, each run's at its mean bytes (0: every
    wave its own, as the registered round's predictions were written — every wave then differs, and its clock with
    it: slower to compute; the runs' times are within 0.4 % of it at every registered and campaign record)."""

    tensor_ghz: float
    throttled_ghz: float
    direct_store_bytes_per_ns: float
    long_run_ms: float
    wgmma: Any
    timing: Any
    l2_bytes_per_ns: float = 0.0
    cluster_fence_ns: float = 0.0
    cluster_fence_fp8_ns: float = 0.0
    cluster_fence_fp8_after_ns: float = 0.0
    scale_load_ns: float = 0.0
    scale_load_ns_per_rate: float = 0.0
    fp8_issue_cycles: float = 0.0
    fp8_scale_issue_cycles: float = 0.0
    fp8_ring_issue_cycles: float = 0.0
    fp8_promote: tuple = ()
    smem_shared: bool = False
    wave_clock: tuple = ()
    form_clock: tuple = ()
    smem_write_weight: float = 1.0
    scale_ws_gate: tuple = ()
    reuse_window: int | None = None
    window_k_exponent: float = 0.0
    delivery_floor_tb_s: float = 0.0
    lonely_share: float = 0.0
    delivery_pairs: bool = True
    tile_read_tb_s: float = 0.0
    form_drifts: tuple = ()
    capacity_drift: float = 0.0
    capacity_blocks: int = 8
    source: str = ""
    notes: tuple = ()

    def clock(self, regime: str) -> float:
        if regime == "sustained":
            return self.tensor_ghz
        if regime == "throttled":
            return self.throttled_ghz
        raise ValueError(f"clock regime {regime!r}: 'sustained' or 'throttled'")


# ------------------------------------------------------------------------------------------------
# the tensor cores: the consumers' k-block loops against one in-order queue

@dataclass(frozen=True)
class IssueTiming:
    """Steady state of the consumers' k-block loops, in SM clock cycles per k-block: ``cycles`` (the period),
    ``busy`` (tensor-core cycles of the k-block's wgmmas), ``ideal`` (MACs / peak MACs per clock), ``hold`` (how
    long the consumers keep a stage that lands while they wait for it: its wgmmas, the last one's results, the
    ``wait_group`` — with a group in flight at least one period, as the stage goes back only after the next
    k-block's group is issued)."""

    cycles: float
    busy: float
    ideal: float
    hold: float


@lru_cache(maxsize=8192)
def issue_timing(f: Form, w, extra_cycles: float = 0.0, sync_cycles: float = 0.0, fence_cycles: float = 0.0,
                 pre_cycles: float = 0.0, post_cycles: float = 0.0, groups: int = 32,
                 load_cycles: float = 0.0, group_issue_cycles: float = 0.0, promote_block_cycles: float = -1.0,
                 scale_issue_cycles: float = 0.0, ring_issue_cycles: float = 0.0,
                 stagger_cycles: float = 0.0, fence_after_cycles: float = 0.0) -> IssueTiming:
    """Run ``f.issuers`` warpgroups' k-block loops for ``groups`` k-blocks on lesson 7's wgmma model ``w``
    (:class:`~h100lab.tensorcore.timing.WgmmaTiming`), every stage already full: each k-block a warpgroup spends
    ``pre_cycles`` (its full-barrier wait finding the phase complete, ``wgmma.fence``), issues
    ``f.wgmmas_per_group`` wgmmas (``issue`` cycles each; the tensor cores take them in order, ``exec_cycles``
    each), commits, waits (``wait_group 1`` with ``inflight`` and no promotion, else ``0``; results visible
    ``latency_tail`` after the last one leaves the tensor cores, or ``latency_start`` after it started, whichever
    is later), pays ``wait``, with promotion ``f.promote_cycles``, then ``post_cycles`` (the empty-barrier arrive,
    the loop branch); ``extra_cycles`` per k-block on the first warpgroup (a consumer that issues the TMA itself).
    The next warpgroup to issue is the one whose loop is earliest (ties: the lower one); with ``f.cta_sync`` every
    warpgroup then waits for all at a barrier that releases ``sync_cycles`` after the last arrives; without
    ``f.overlap`` a warpgroup issues only after every other one's last k-block finished (wait and promotion
    included); with ``f.cluster_fence`` the stage's release waits for every group of the warpgroup still in
    flight and then ``fence_cycles``; with promotion (FP8) each m64 block of the warpgroup is issued, waited for and
    promoted in turn and its scale loads take ``load_cycles``: with ``f.scale_lead`` 1 they are issued after the
    block's wgmmas and the k-block ends no earlier than they land (the loop-carried copies of the scales); with a
    ring of ``scale_lead`` n ≥ 2 they are issued after a block's promotion and the promotion n k-blocks later
    waits for them. FP8's consumer chain as the trace measured it (0 / -1: lesson 7's and the FFMA rate):
    ``group_issue_cycles`` (a group's fence, wgmmas and commit: its first wgmma reaches the tensor cores after this
    less the wgmmas' own issue — the trace's group waits for all of its wgmmas after the window),
    ``promote_block_cycles`` (one m64 block's promotion), ``scale_issue_cycles`` (lead 1: issuing the next block's
    loads after the group), ``ring_issue_cycles`` (lead ≥ 2: issuing the ring's loads after the promotion), ``stagger_cycles`` (a staggered
    form's named-barrier pass before its group, after the other consumer's arrival: :attr:`Form.stagger`). The
    period is the slope of the last completion over the second half of the run."""
    return _issue_loop(f, w, extra_cycles, sync_cycles, fence_cycles, pre_cycles, post_cycles, groups, load_cycles,
                       chain=(group_issue_cycles, promote_block_cycles, scale_issue_cycles, ring_issue_cycles,
                              stagger_cycles, fence_after_cycles))


def _issue_loop(f: Form, w, extra_cycles: float, sync_cycles: float, fence_cycles: float, pre_cycles: float,
                post_cycles: float, groups: int, load_cycles: float, rec: list | None = None,
                chain: tuple = (0.0, -1.0, 0.0, 0.0, 0.0, 0.0)) -> IssueTiming:
    """:func:`issue_timing`'s loop; ``rec`` (a list) receives one (warpgroup, k-block, {event: cycle}) per k-block
    and warpgroup — the events of ``l08_gemm.cu -DTRACE=1``'s consumers: ``full`` (the full-barrier wait passed),
    ``issued`` (the group committed), ``waited`` (wait_group returned), ``promoted`` (FP8), ``end`` (the k-block's
    last instruction) — for :func:`issue_events`."""
    from ..tensorcore.timing import RATE, exec_cycles

    e = exec_cycles(f.atype, f.bn, w)
    g = f.wgmmas_per_group
    depth = 1 if (f.inflight and not f.promote) else 0
    n = f.issuers
    t = [0.0] * n
    pending: list[list[float]] = [[] for _ in range(n)]
    done = [0] * n
    finish = [[0.0] * groups for _ in range(n)]
    issued: list[list[float]] = [[] for _ in range(n)]     # FP8: when each k-block's scale loads land
    tc_free = 0.0
    sub = [0] * n                                          # FP8: the m64 block each warpgroup issues next
    blk: list = [None] * n                                 # FP8: that k-block's state (events, loads)
    stagger = f.stagger and f.promote and n == 2
    arrived: list[list[float]] = [[] for _ in range(n)]    # stagger: each consumer's bar.arrive after its issue

    def handoff(k: int):
        """Stagger: when the other consumer's arrival that lets consumer k issue its next k-block came (consumer 0
        block j waits for consumer 1's issue of block j - 1, consumer 1 block j for consumer 0's of block j); None
        while the loop has not got there yet."""
        if not stagger or sub[k]:
            return 0.0
        j = done[k] - (1 if k == 0 else 0)
        if j < 0:
            return 0.0
        return arrived[1 - k][j] if len(arrived[1 - k]) > j else None

    while min(done) < groups:
        # the next to issue: the warpgroup ready first (its loop's time plus, for the one whose thread issues the
        # TMA, that issue: the other warpgroup's wgmmas go ahead of it meanwhile); FP8 forms with two m64 blocks per
        # consumer step block by block, so the tensor cores take every group in the order it was issued
        ready = [k for k in range(n) if done[k] < groups and handoff(k) is not None]
        i = min(ready, key=lambda k: (max(t[k] + pre_cycles, handoff(k)) if stagger and sub[k] == 0 else
                                      t[k] + (extra_cycles if k == 0 and sub[k] == 0 else 0), k))
        if sub[i] == 0:
            if not f.overlap:
                t[i] = max([t[i]] + [finish[k][done[k] - 1] for k in range(n) if k != i and done[k] > 0])
            if i == 0:
                t[i] += extra_cycles
            t[i] += pre_cycles
            ev = {"full": t[i]}
            if stagger:                               # bar.sync: the other consumer's arrival, the barrier
                t[i] = max(t[i], handoff(i)) + chain[4]
        vis = 0.0
        if f.promote:
            # FP8 (l08_gemm.cu): per m64 block of the consumer, its wgmmas, wait_group 0, the promotion. Scale
            # loads (ld.global), ``scale_lead`` 1: the next k-block's, issued right after the block's wgmmas; the
            # loop-carried copies at the k-block's end (SASS: IMAD.MOV / R2UR) wait for them. ``scale_lead`` n ≥ 2
            # (a register ring of depth n, the loop unrolled by it): block kb + n's, issued after block kb's
            # promotion (the last reader of that slot) and first read by block kb + n's promotion, which waits for
            # them. Scales through shared memory: no load (``load_cycles`` 0).
            mb = f.wg_rows // 64
            lead = f.scale_lead
            j = len(issued[i]) - lead                 # the k-block whose promotion issued this one's ring loads
            if sub[i] == 0:
                blk[i] = (ev, [0.0] * mb)
            ev, loads = blk[i]
            g_issue, p_block, s_issue, r_issue = chain[:4]
            # the trace: a group's first wgmma reaches the tensor cores only after the window's fixed part (the
            # wgmma.fence, the warpgroup converging, the descriptors); the wgmmas then follow at lesson 7's issue
            lump = max(0.0, g_issue - (g // mb) * w.issue)
            promote = p_block if p_block >= 0 else f.promote_cycles / mb
            loading = load_cycles > 0 or s_issue > 0 or r_issue > 0
            b = sub[i]
            # block b of the consumer's k-block
            vis = 0.0
            t[i] += lump
            for _ in range(g // mb):
                t[i] += w.issue
                s = max(t[i], tc_free)
                tc_free = s + e
                vis = max(vis, s + w.latency_start, tc_free + w.latency_tail)
            ev["issued"] = t[i]
            if stagger:
                arrived[i].append(t[i])               # bar.arrive for the other consumer
            if lead == 1 and loading:
                t[i] += s_issue                   # the next block's ld.global, issued under the group
                loads[b] = t[i] + load_cycles
            t[i] = max(t[i], vis) + w.wait
            ev["waited"] = t[i]
            if lead == 1 and f.scale_copy == "wait" and load_cycles > 0:
                t[i] = max(t[i], loads[b])        # the early copy: release and promotion wait for the loads
            if lead > 1 and j >= 0 and load_cycles > 0:
                t[i] = max(t[i], issued[i][j][b])
            if f.cluster_fence and b == mb - 1:
                # the stage's release right after wait_group, before the promotion (l08_gemm.cu): the remote
                # arrive's .release.cluster (SASS: MEMBAR.ALL.GPU) also waits for the thread's loads still in
                # flight, which land under it — lead 1: this k-block's scale loads; a ring: those issued before
                out = loads[:b + 1] if lead == 1 else loads[:b] + [x for q in issued[i][max(0, j + 1):] for x in q]
                # (the barrier's part that runs under them, ``fence_cycles``, and its part after, ``chain[5]``)
                t[i] = max([t[i] + fence_cycles] + out) + chain[5]
            t[i] += promote
            ev["promoted"] = t[i]
            if lead > 1 and loading:
                t[i] += r_issue                   # the ring's loads for block kb + lead
                loads[b] = t[i] + load_cycles
            if b < mb - 1:                            # the consumer's next m64 block: back to the queue
                sub[i] += 1
                continue
            sub[i] = 0
            issued[i].append(loads)
            if lead == 1 and load_cycles > 0:
                t[i] = max([t[i]] + loads)
            t[i] += post_cycles
            finish[i][done[i]] = t[i]
            if rec is not None:
                rec.append((i, done[i], dict(ev, end=t[i])))
            done[i] += 1
            continue
        for _ in range(g):
            t[i] += w.issue
            s = max(t[i], tc_free)
            tc_free = s + e
            vis = max(vis, s + w.latency_start, tc_free + w.latency_tail)
        ev["issued"] = t[i]
        pending[i].append(vis)
        if len(pending[i]) > depth:
            k = len(pending[i]) - depth
            t[i] = max(t[i], max(pending[i][:k]))
            pending[i] = pending[i][k:]
        if f.cluster_fence and (depth == 0 or done[i] > 0):     # the release.cluster of the stage given back
            t[i] = max([t[i]] + pending[i]) + fence_cycles
            pending[i] = []
        ev["waited"] = t[i] + w.wait
        t[i] += w.wait + f.promote_cycles + post_cycles
        finish[i][done[i]] = max(t[i], vis)
        if rec is not None:
            rec.append((i, done[i], dict(ev, end=t[i])))
        done[i] += 1
        if f.cta_sync and len(set(done)) == 1:          # every warpgroup finished this k-block: __syncthreads
            t = [max(t) + sync_cycles] * n
            for k in range(n):
                finish[k][done[k] - 1] = t[k]
    half = groups // 2
    ends = [max(finish[k][j] for k in range(n)) for j in range(groups)]
    period = max((ends[-1] - ends[half - 1]) / (groups - half), n * g * e)
    own = pre_cycles + n * g * (e + w.issue) + w.latency_tail + (0.0 if f.overlap else (n - 1) * (
        pre_cycles + w.latency_tail + w.wait + f.promote_cycles + post_cycles))
    own += fence_cycles if f.cluster_fence else 0.0
    hold = (max(own, period) if depth else own) + w.wait + (sync_cycles if f.cta_sync else 0.0)
    return IssueTiming(period, n * g * e, f.macs_per_kblock / RATE[f.atype], hold)


# ------------------------------------------------------------------------------------------------
# the schedule: waves, tiles of the critical CTA, DRAM bytes per wave

@dataclass(frozen=True)
class _Layout:
    grid: int
    tiles: int
    k_blocks: int
    per_cta: int                      # tiles of the busiest CTA
    waves: tuple                      # (active CTAs, DRAM bytes, L2 hit rate) per wave of the busiest CTA


@lru_cache(maxsize=1024)
def _persistent_order(f: Form, tm: int, tn: int, group: int, order_dir: str) -> tuple:
    """The tile order of a persistent launch of ``f`` on a ``tm × tn`` tile grid: the grouped order
    (:func:`h100lab.design.schedule.static_order`), for a cluster pair the order of pairs of tile rows, each pair's
    two tiles one after the other (CTA ranks 0 and 1 of the cluster). A tuple, computed once per grid and form
    (the time model asks for the same few hundreds of times)."""
    from . import schedule

    if f.cluster == 2:
        return tuple((2 * q + r, n) for q, n in schedule.static_order(-(-tm // 2), tn, group, order_dir)
                     for r in (0, 1))
    return tuple(schedule.static_order(tm, tn, group, order_dir))


@lru_cache(maxsize=512)
def _layout(f: Form, M: int, N: int, K: int, sms: int, group: int, raster: int, window=None) -> _Layout:
    from . import capstone as cap
    from . import schedule
    from .traffic import l2_estimate

    for name, x in (("M", M), ("N", N), ("K", K), ("sms", sms), ("group", group)):
        if int(x) != x or x < 1:
            raise ValueError(f"{name} = {x}: a positive integer")
    if raster not in (0, 1):
        raise ValueError(f"raster = {raster}: 0 (along M) or 1 (along N)")
    tm, tn = -(-M // f.bm), -(-N // f.bn)
    tiles = tm * tn
    kb = -(-K // f.bk)
    order_dir = "m" if raster == 0 else "n"
    eb = f.elem_bytes
    if f.schedule == "persistent":
        order = _persistent_order(f, tm, tn, group, order_dir)
        if f.cluster == 2:
            grid = 2 * max(1, min(sms // 2, len(order) // 2))
        else:
            grid = max(1, min(sms, tiles))
        per = -(-len(order) // grid)
        l2 = l2_estimate(order, grid, f.bm, f.bn, K, eb, window)      # reads per wave (traffic: window None = in step)
        waves = []
        for w in range(per):
            wave = order[w * grid:(w + 1) * grid]
            a, b = l2.per_wave[w]
            dram = (a * f.bm + b * f.bn) * K * eb
            req = len(wave) * (f.bm + f.bn) * K * eb
            waves.append((len(wave), dram, 1 - dram / req))
        return _Layout(grid, tiles, kb, per, tuple(waves))
    # one CTA per tile (or per two tiles), as many resident as SMs (one CTA per SM: the ring's shared memory)
    order = schedule.static_order(tm, tn, group, order_dir)
    per_cta = 2 if f.schedule == "pairs" else 1
    ctas = -(-tiles // per_cta)
    grid = ctas
    per = -(-ctas // sms)             # CTA waves; the busiest SM runs `per` CTAs one after another
    l2 = l2_estimate(order, sms * per_cta, f.bm, f.bn, K, eb, window, concurrent=sms)
    waves = []
    for w in range(per):
        wave = order[w * sms * per_cta:(w + 1) * sms * per_cta]
        a, b = l2.per_wave[w]
        dram = (a * f.bm + b * f.bn) * K * eb
        req = len(wave) * (f.bm + f.bn) * K * eb
        waves.append((-(-len(wave) // per_cta), dram, 1 - dram / req))
    return _Layout(grid, tiles, kb, per * per_cta, tuple(waves))


# ------------------------------------------------------------------------------------------------
# the prediction

@dataclass(frozen=True)
class Wave:
    """One wave of the busiest CTA: ``active`` CTAs; the per-k-block ``bounds`` (ns: tensor, tma, hbm, ring) and
    their smooth maximum ``period_ns``; ``tiles`` of this CTA in the wave (2 for a two-tile CTA of ``pairs``);
    ``mainloop_ns`` and ``exposed_ns`` (epilogue and drain the tensor cores wait for) per tile; ``hit_rate``; FP8
    with a loaded scale latency (``scale_load_ns_per_rate``): ``scale_load_ns`` of the wave (0: the one latency);
    ``clock_ghz``: the wave's own clock (:attr:`PerfParams.wave_clock`; 0: the prediction's clock).
    ``bounds["tensor"]`` is the wave's own consumer chain (it differs from wave to wave with that latency)."""

    active: int
    bounds: dict
    period_ns: float
    tiles: int
    mainloop_ns: float
    exposed_ns: float
    hit_rate: float
    scale_load_ns: float = 0.0
    clock_ghz: float = 0.0


@dataclass(frozen=True)
class Prediction:
    """The model's answer for one launch: ``time_ns`` of the busiest CTA from launch to its last store, and its
    parts: ``fill_ns`` (per CTA start: the first stage's load), the ``waves``, ``epilogue_ns`` of one tile,
    ``drain_ns`` (the last wgmma's results), ``issue`` (cycles per k-block), ``clock_ghz`` and ``regime``; the launch
    shape ``grid``, ``tiles``, ``k_blocks``, ``tiles_per_cta``."""

    form: Form
    M: int
    N: int
    K: int
    sms: int
    group: int
    raster: int
    grid: int
    tiles: int
    k_blocks: int
    tiles_per_cta: int
    clock_ghz: float
    regime: str
    issue: IssueTiming
    fill_ns: float
    starts: int
    epilogue_ns: float
    drain_ns: float
    waves: tuple
    time_ns: float

    @property
    def time_ms(self) -> float:
        return self.time_ns * 1e-6

    @property
    def tflops(self) -> float:
        return 2.0 * self.M * self.N * self.K / self.time_ns * 1e-3

    @property
    def bound(self) -> str:
        """The largest per-k-block bound of the first wave."""
        b = self.waves[0].bounds
        return max(b, key=b.get)


def _loop_args(f: Form, p: PerfParams, ghz: float, load_ns: float | None = None) -> dict:
    """:func:`issue_timing`'s per-k-block costs (cycles at ``ghz``) of form ``f`` under ``params``: the TMA issue of
    a consumer thread (no producer), the ``__syncthreads`` (ring kernels without a producer), a cluster pair's
    release fence, the full-barrier try_wait and ``wgmma.fence`` before the group, the empty-barrier arrive and loop
    branch after it, FP8's scale loads (``load_ns``: their latency, default ``p.scale_load_ns``)."""
    t, w = p.timing, p.wgmma
    extra = 0.0 if f.specialized else (t.mbarrier_expect_tx_ns + 2 * t.tma_issue_ns) * ghz
    warps = f.consumers * 4 + (0 if not f.specialized else 4)
    sync = (t.bar_sync_ns + t.bar_sync_per_warp_ns * warps) * ghz if f.cta_sync else 0.0
    fp8_fence = f.promote and (p.cluster_fence_fp8_ns or p.cluster_fence_fp8_after_ns)
    fence_ns = (p.cluster_fence_fp8_ns if fp8_fence else p.cluster_fence_ns
                or (t.cluster_arrive_release_ns + t.cluster_arrive_release_per_warp_ns * 4))
    fence = fence_ns * ghz if f.cluster_fence else 0.0
    pre = t.wait_hit_ns * ghz + getattr(w, "fence", 0.0)         # full-barrier try_wait (phase complete), fence
    # the empty-barrier arrive (none in a ring kernel without a producer: its __syncthreads frees the stage), the
    # loop's branch
    arrive = 0.0 if f.cta_sync else t.mbarrier_arrive_ns
    post = arrive * ghz + getattr(w, "loop", 0.0)
    # FP8: a k-block's scale loads (ld.global from the consumer's loop; none when they come with the stage)
    load = (p.scale_load_ns if load_ns is None else load_ns) * ghz if (f.promote and not f.scale_smem) else 0.0
    out = {"extra_cycles": round(extra, 6), "sync_cycles": round(sync, 6), "fence_cycles": round(fence, 6),
           "pre_cycles": round(pre, 6), "post_cycles": round(post, 6), "load_cycles": round(load, 6)}
    if f.promote:
        out.update(group_issue_cycles=round(p.fp8_issue_cycles, 6),
                   promote_block_cycles=round(fp8_promote_block(p, f.bn), 6),
                   scale_issue_cycles=0.0 if f.scale_smem else round(p.fp8_scale_issue_cycles, 6),
                   ring_issue_cycles=0.0 if f.scale_smem else round(p.fp8_ring_issue_cycles, 6))
        if f.cluster_fence:
            out["fence_after_cycles"] = round(p.cluster_fence_fp8_after_ns * ghz if fp8_fence else 0.0, 6)
        if f.stagger:
            # the named barrier of the two consumers (8 warps): lesson 3's bar.sync release after the last arrival
            out["stagger_cycles"] = round((t.bar_sync_ns + t.bar_sync_per_warp_ns * 8) * ghz, 6)
    return out


def wave_clock_ratio(p: PerfParams, activity: float, active: int, sms: int) -> float:
    """The clock of a wave with ``active`` CTAs over the clock of a whole wave, under the power limit
    (:attr:`PerfParams.wave_clock` = (``budget``, ``cap_ghz``); the model's, :func:`calibrated`; () off). [model] An SM's dynamic
    power is proportional to its clock × its activity — ``activity``: the shared-memory bytes its k-block moves per
    SM clock at the model's period (the SS wgmma operand reads and the TMA's stage writes, :attr:`Form.smem_bytes`:
    a proxy for the tensor cores' and shared memory's switching) — and the chip holds its power limit by its clock:
    ``f = min(cap, budget · SMs / (activity · active))``. A whole wave of a form with ``budget / activity`` below
    ``cap`` is power-limited (the bf16 forms: the k-block traces read 1.48–1.60 GHz), a partial wave runs up to
    ``cap`` (the traces' last waves: 1.73–1.81 GHz); a form whose whole wave is already at ``cap`` (FP8: its tensor
    cores idle ~40–50 % of the k-block, so fewer bytes per clock) gains nothing — as its traces read (1.70–1.72
    GHz in the whole and the partial wave). Returns ``f(active) / f(sms)`` (≥ 1)."""
    if not p.wave_clock or activity <= 0:
        return 1.0
    budget, cap = p.wave_clock
    full = min(cap, budget / activity)
    part = min(cap, budget * sms / (activity * max(1, active)))
    return max(1.0, part / full)


def at_clock(p: PerfParams, ghz: float) -> PerfParams:
    """``p`` with its whole waves at ``ghz``, a clock read on silicon (a k-block trace's clock64 over globaltimer,
    nvidia-smi during a clock run), in both regimes: the form clock off (it would put each wave at its own
    activity's clock, :func:`form_clock_ratio`), the per-wave clock's rise in a partial wave kept
    (:func:`wave_clock_ratio`: the reads are of whole waves). What the model's cycles give at that clock."""
    return replace(p, tensor_ghz=ghz, throttled_ghz=ghz, form_clock=())


def form_clock_ratio(p: PerfParams, activity: float, active: int, sms: int, regime: str = "sustained",
                     limit: float = 128.0) -> float:
    """The clock of a wave with ``active`` CTAs whose SMs move ``activity`` shared-memory bytes per SM clock, over
    the regime's clock ``p.clock(regime)``, under :attr:`PerfParams.form_clock` = (``c0``, ``c1``) (() : 1). [model]
    The chip holds its power limit by its clock; its power is the clock × (a part every SM draws, ``c0``, + a part
    that follows what the active SMs switch, ``c1 · a · active / SMs`` with ``a`` = ``activity`` / ``limit``, the
    bytes per clock over the bank bandwidth: the SS wgmmas' operand reads and the TMA's writes, a proxy for the
    tensor cores' and shared memory's work), so ``f = 1 / (c0 + c1 · a · active / SMs)`` GHz, capped at the
    partial-wave clock the k-block traces read (:attr:`PerfParams.wave_clock`'s cap), × ``throttled_ghz /
    tensor_ghz`` in the throttled regime. Fitted on Nsight Compute's clocks of every bf16 form at 4096³ and 8192³
    (:func:`form_clock_constants`): the part every SM draws is most of the budget, so forms differ by a few per
    cent (ping-pong without a group in flight, its tensor pipe 70 % busy, 1.66 GHz at 8192³; with one, 91 %, 1.49)
    and a partial wave rises to the cap."""
    if not p.form_clock or activity <= 0:
        return 1.0
    c0, c1 = p.form_clock[:2]
    cap = p.wave_clock[1] if p.wave_clock else math.inf
    f = min(cap, 1.0 / (c0 + c1 * activity / limit * max(1, active) / sms))
    if regime == "throttled":
        f *= p.throttled_ghz / p.tensor_ghz
    return f / p.clock(regime)


def scale_load_latency(p: PerfParams, rate: float) -> float:
    """The FP8 lead-1 scale loads' latency (ns, issue to the copies' wait) at a DRAM read rate ``rate`` (B/ns) of
    the wave (:func:`scale_read_bytes` over its mainloop): ``p.scale_load_ns + p.scale_load_ns_per_rate · rate``
    [model, calibrated on the k-block trace runs: :data:`SCALE_CALIBRATION`]. The loads are L2 hits (the scales are
    a few MiB, reused by every CTA of a tile row or column) queued behind the L2's fills from DRAM; a queue's
    waiting time grows with its load — first order: linearly, the form here (two constants, no capacity)."""
    if rate < 0:
        raise ValueError(f"rate {rate}: a DRAM read rate in bytes per ns is >= 0")
    return p.scale_load_ns + p.scale_load_ns_per_rate * rate


@lru_cache(maxsize=1024)
def scale_read_bytes(f: Form, M: int, N: int, K: int, sms: int, group: int = 8, raster: int = 0) -> tuple:
    """Per wave of a persistent launch of ``f`` (the order and grid of :func:`_layout`): the bytes of A and B the
    wave reads from DRAM, the load :func:`scale_load_latency` sees. In step (the cooperative forms,
    :mod:`h100lab.design.traffic`), each distinct panel of the wave once; and when A and B together fit in the L2
    (``(M + N) · K`` elements ≤ :attr:`h100lab.specs.H200_SXM.l2_bytes`) only the panels no earlier wave read
    [assumption: what fits stays; the wave-by-wave estimate of :func:`_layout` has no capacity, so at 4096³ it
    reads every wave's panels again]. A launch of one tile per CTA: the waves of :func:`_layout` as they are."""
    from ..specs import H200_SXM

    panels = _wave_panels(f, M, N, K, sms, group, raster)
    if panels is None:
        return tuple(float(d) for _, d, _ in _layout(f, M, N, K, sms, group, raster).waves)
    fits = (M + N) * K * f.elem_bytes <= H200_SXM.l2_bytes
    seen_a: set = set()
    seen_b: set = set()
    out = []
    for rows, cols in panels:
        a = rows - (seen_a if fits else set())
        b = cols - (seen_b if fits else set())
        seen_a |= a
        seen_b |= b
        out.append(_panel_bytes(f, a, b, K))
    return tuple(out)


def _wave_panels(f: Form, M: int, N: int, K: int, sms: int, group: int, raster: int) -> list | None:
    """Per wave of a persistent launch of ``f`` (the order and grid of :func:`_layout`): the (tile rows, tile
    columns) its CTAs hold — the A and B panels it reads; None for a launch of one tile per CTA."""
    if f.schedule != "persistent":
        return None
    lay = _layout(f, M, N, K, sms, group, raster)
    order = _persistent_order(f, -(-M // f.bm), -(-N // f.bn), group, "m" if raster == 0 else "n")
    waves = (order[i * lay.grid:(i + 1) * lay.grid] for i in range(len(lay.waves)))
    return [({m for m, _ in w}, {n for _, n in w}) for w in waves]


def _panel_bytes(f: Form, rows, cols, K: int) -> float:
    """The bytes of the A panels of tile rows ``rows`` and the B panels of tile columns ``cols``, over the whole of
    K (a working set)."""
    return float((len(rows) * f.bm + len(cols) * f.bn) * K * f.elem_bytes)


class DeliveryWave(NamedTuple):
    """One wave of :func:`delivery_waves`: its ``lonely`` share, its ``in_step_dram`` bytes, its ``working_set``
    (bytes), the bytes one in-flight set requests per k-block (``set_kblock_bytes``) and the whole wave's requested
    bytes (``requested``)."""

    lonely: float
    in_step_dram: float
    working_set: float
    set_kblock_bytes: float
    requested: float


@lru_cache(maxsize=1024)
def delivery_waves(f: Form, M: int, N: int, K: int, sms: int, group: int, raster: int, window: int,
                   per_set: bool = True) -> tuple:
    """Per wave of a ping-pong launch of ``f`` whose sharers drift apart beyond ``window`` consecutive CTAs (the
    reuse window of :mod:`h100lab.design.traffic`): a :class:`DeliveryWave` — lonely share, in-step DRAM bytes,
    working set bytes, requested bytes per k-block of one in-flight set, and the wave's requested bytes [model,
    issue 17].

    * lonely share — :func:`h100lab.design.traffic.lonely_bytes` over the wave's requested bytes: the part read by
      a tile whose panel has no other sharer in its window (a wave of a ``pairs`` launch: each in-flight set of
      ``sms`` consecutive tiles, as :func:`h100lab.design.traffic.l2_estimate` reads it);
    * in-step DRAM bytes — the wave's reads with its sharers in step (:func:`_layout` with no window);
    * working set — the distinct A and B panels over the whole of K of the wave's largest in-flight set (a
      persistent wave: the wave; a ``pairs`` wave: ``sms`` consecutive tiles, what its CTAs read at once;
      ``per_set`` False: the whole wave's, as the first delivery round had it);
    * requested bytes per k-block — every tile's A and B k-slices (``(bm + bn) · bk`` elements per tile), per
      in-flight set; the wave's requested bytes — every tile's A and B k-slices of the wave, per k-block.

    :func:`predict` uses them when :attr:`PerfParams.delivery_floor_tb_s` is set: a wave whose lonely share is over
    :attr:`PerfParams.lonely_share` (:func:`h100lab.design.traffic.fit_lonely_share`) runs out of step as a whole,
    so L2 merges none of its requests (the L2 Request Coalescer merges only requests that arrive together) and
    delivers every requested byte — its k-block takes at least the
    requested bytes per k-block at the delivery ceiling; and where its working set fits in the L2
    (:attr:`h100lab.specs.H200_SXM.l2_bytes`), a k-slice one sharer brought in is still there for the next, so its
    DRAM reads are the in-step reads, not the window's. The silicon behind it (``data/l08/gemm_l2_delivery``,
    ``l08/gemm_l2_traffic``, :func:`h100lab.design.traffic.delivery_rows`): ping-pong runs in orders whose B sharers
    are 16 or more CTAs apart deliver 0.97–1.17 of their requested bytes from L2, at 6.6–8.9 TB/s, and read from
    DRAM what the grouped order reads when A and B fit in L2; runs whose B sharers are 1–4 CTAs apart deliver about
    half."""
    from . import schedule
    from .traffic import lonely_bytes
    tm, tn = -(-M // f.bm), -(-N // f.bn)
    order_dir = "m" if raster == 0 else "n"
    order = (_persistent_order(f, tm, tn, group, order_dir) if f.schedule == "persistent"
             else tuple(schedule.static_order(tm, tn, group, order_dir)))
    lay = _layout(f, M, N, K, sms, group, raster, window)
    ins = _layout(f, M, N, K, sms, group, raster, None)
    pa, pb = f.bm * f.bk * f.elem_bytes, f.bn * f.bk * f.elem_bytes
    step = lay.grid if f.schedule == "persistent" else sms * (2 if f.schedule == "pairs" else 1)
    conc = lay.grid if f.schedule == "persistent" else sms
    out = []
    for w in range(len(lay.waves)):
        wave = order[w * step:(w + 1) * step]
        sets = [wave[i:i + conc] for i in range(0, len(wave), conc)]
        lonely = sum(lonely_bytes(s, window, pa, pb) for s in sets)
        req = len(wave) * (pa + pb)
        ws = max(_panel_bytes(f, {t[0] for t in x}, {t[1] for t in x}, K) for x in (sets if per_set else [wave]))
        out.append(DeliveryWave(lonely / req, float(ins.waves[w][1]), ws, req / len(sets), req))
    return tuple(out)


#: the wave working sets (MB, 10⁶ bytes) between which the model's FP8 scale loads go from unloaded to loaded by the
#: wave's DRAM reads (:func:`scale_ws_factor`): the bounds of the working-set hypothesis of
#: :mod:`h100lab.validation.l08_lead`, read off the lead pairs under Nsight Compute (every in-domain pair at ≤ 19.7
#: MB hidden, every one at ≥ 32.8 MB exposed) and registered before its own run, which called all 16 pairs right
#: (``data/l08/gemm_lead_ws``, ``_b``)
SCALE_WORKING_SET_MB = (20.0, 32.0)


@lru_cache(maxsize=1024)
def wave_working_sets(f: Form, M: int, N: int, K: int, sms: int, group: int = 8, raster: int = 0) -> tuple:
    """Per wave of a persistent launch of ``f`` (the order and grid of :func:`_layout`): its in-step working set —
    its distinct A and B panels over the whole of K, bytes — whatever an earlier wave read. A launch of one tile per
    CTA: the waves' DRAM bytes of :func:`_layout`."""
    panels = _wave_panels(f, M, N, K, sms, group, raster)
    if panels is None:
        return tuple(float(d) for _, d, _ in _layout(f, M, N, K, sms, group, raster).waves)
    return tuple(_panel_bytes(f, rows, cols, K) for rows, cols in panels)


def scale_ws_factor(p: PerfParams, working_set: float) -> float:
    """The share of a wave's DRAM reads that loads its FP8 scale loads (:func:`scale_load_latency`), from its working
    set (bytes, :func:`wave_working_sets`) under :attr:`PerfParams.scale_ws_gate` = (``lo``, ``hi``) MB: 0 up to
    ``lo``, 1 from ``hi``, linear between [model: the working-set hypothesis of :mod:`h100lab.validation.l08_lead` —
    lead 1 hidden, its loads' latency unloaded, where the wave's working set is small; the ramp between its two
    bounds an assumption]; 1 without a gate."""
    if not p.scale_ws_gate:
        return 1.0
    lo, hi = (x * 1e6 for x in p.scale_ws_gate)
    return min(1.0, max(0.0, (working_set - lo) / (hi - lo)))


def fp8_promote_block(p: PerfParams, bn: int) -> float:
    """Cycles of one m64 × ``bn`` block's promotion under ``p``: the trace's value for that tile N
    (``p.fp8_promote``), else, for an N the trace did not run, the nearest measured N's value scaled by the
    registers (N / 2 per thread); -1 (one FFMA per clock per register, :attr:`Form.promote_cycles`) without a
    trace."""
    if not p.fp8_promote:
        return -1.0
    table = dict(p.fp8_promote)
    if bn in table:
        return float(table[bn])
    near = min(table, key=lambda n: abs(n - bn))
    return float(table[near]) * bn / near


def issue_events(v, params: PerfParams | None = None, regime: str = "sustained", groups: int = 32,
                 load_ns: float | None = None) -> dict:
    """The model's steady k-block of each consumer as ``l08_gemm.cu -DTRACE=1`` times it, in SM cycles (medians over
    the second half of :func:`issue_timing`'s run): ``period`` (one ``full`` to the next), ``issue`` (full →
    issued), ``wgmma`` (issued → waited: the group's wgmmas behind the other consumer's in the tensor-core queue,
    their results, ``wait_group``), ``after`` (waited → end: release, FP8 scales and promotion, arrive, branch),
    ``wait_full`` (end → the next full: waiting for the tensor cores' queue in this model, every stage full);
    and ``cycles`` (the period :func:`issue_timing` reports). ``load_ns``: FP8's scale-load latency (default
    ``params.scale_load_ns``; a wave's loaded one: :attr:`Wave.scale_load_ns`). For
    :func:`h100lab.validation.l08.trace_rows`."""
    f = v if isinstance(v, Form) else form(v)
    p = params if params is not None else calibrated()
    a = _loop_args(f, p, p.clock(regime), load_ns)
    rec: list = []
    it = _issue_loop(f, p.wgmma, a["extra_cycles"], a["sync_cycles"], a["fence_cycles"], a["pre_cycles"],
                     a["post_cycles"], groups, a["load_cycles"], rec,
                     chain=(a.get("group_issue_cycles", 0.0), a.get("promote_block_cycles", -1.0),
                            a.get("scale_issue_cycles", 0.0), a.get("ring_issue_cycles", 0.0),
                            a.get("stagger_cycles", 0.0), a.get("fence_after_cycles", 0.0)))
    per: dict = {}
    for i, k, ev in rec:
        per.setdefault(i, {})[k] = ev
    out: dict = {"issue": [], "wgmma": [], "after": [], "period": [], "wait_full": []}
    for i, evs in per.items():
        for k in range(groups // 2, groups - 1):
            e0, e1 = evs[k], evs[k + 1]
            out["issue"].append(e0["issued"] - e0["full"])
            out["wgmma"].append(e0["waited"] - e0["issued"])
            out["after"].append(e0["end"] - e0["waited"])
            out["period"].append(e1["full"] - e0["full"])
            out["wait_full"].append(e1["full"] - e0["end"])
    med = lambda xs: sorted(xs)[len(xs) // 2]                      # noqa: E731
    return {**{k: med(x) for k, x in out.items()}, "cycles": it.cycles}


def run_ms(time_ms: float, launches: int) -> float:
    """How long ``launches`` back-to-back launches of ``time_ms`` keep the GPU busy (the power regime's clock)."""
    return float(time_ms) * int(launches)


def predict(v, M: int, N: int, K: int, *, sms: int | None = None, group: int = 8, raster: int = 0,
            params: PerfParams | None = None, regime: str = "sustained", launches: int | None = None,
            window="model") -> Prediction:
    """Predict one launch of ``v`` (a :class:`Form`, a capstone variant or its name) on an M × N × K GEMM with
    ``sms`` SMs (default the H200's, :data:`h100lab.specs.H200_SXM`), tile group ``group`` and ``raster`` (0: along
    M, 1: along N), with ``params`` (default :func:`calibrated`). ``regime``: the clock (``"sustained"`` or
    ``"throttled"``); with ``launches`` (back-to-back launches of a measurement) the regime follows the run length
    (throttled when ``launches`` × the sustained prediction reaches ``params.long_run_ms``). ``window``: the L2
    reuse window of the wave's DRAM reads (:mod:`h100lab.design.traffic`; ``"model"``: its calibrated window for a
    ping-pong form, in step for the others; None: in step). Formulas: the module docstring.

    A pure function of its arguments once ``params`` and ``window`` are resolved: :func:`_predict` remembers the
    last answers (``lru_cache``; keyed on the form, shape, SMs, order, the :class:`PerfParams` — frozen, compared by
    value, its lesson-3 table by identity, which is immutable — the regime and the resolved window). Callers read a
    :class:`Prediction`, they do not modify it."""
    from ..specs import H200_SXM

    f = v if isinstance(v, Form) else form(v)
    p = params if params is not None else calibrated()
    sms = H200_SXM.sm_count if sms is None else int(sms)
    if window == "model":              # the reuse window of h100lab.design.traffic: None (in step) unless ping-pong
        from .traffic import window_for
        window = window_for(f, p, K)
    M, N, K, group, raster = int(M), int(N), int(K), int(group), int(raster)
    if launches is not None:
        first = _predict(f, M, N, K, sms, group, raster, p, "sustained", window)
        regime = "throttled" if run_ms(first.time_ms, launches) >= p.long_run_ms else "sustained"
    return _predict(f, M, N, K, sms, group, raster, p, regime, window)


@lru_cache(maxsize=8192)
def _predict(f: Form, M: int, N: int, K: int, sms: int, group: int, raster: int, p: PerfParams, regime: str,
             window, dram_total: float | None = None) -> Prediction:
    """:func:`predict` with every argument resolved (remembered: a repeated question is answered once);
    ``dram_total``: the launch's DRAM bytes as given (:func:`predict_bytes`), spread over the waves as the model's."""
    from ..sim.timing import read_ceiling, soft_period
    from ..specs import H200_SXM

    ghz = p.clock(regime)
    t = p.timing
    w = p.wgmma
    lay = _layout(f, M, N, K, sms, group, raster, window)
    dram_waves, read_rate = _dram_waves(f, M, N, K, sms, group, raster, p, lay, dram_total)
    it = issue_timing(f, w, **_loop_args(f, p, ghz))
    arrive = 0.0 if f.cta_sync else t.mbarrier_arrive_ns
    hbm = read_ceiling(t)
    drain = (w.latency_tail + w.wait) / ghz
    if f.epilogue == "tma":
        epi = f.c_bytes / t.tma_store_bytes_per_ns + t.tma_store_read_ns
    else:
        epi = f.c_bytes / p.direct_store_bytes_per_ns
    remote = 0.0 if f.cluster_fence or f.cluster == 1 else t.cluster_arrive_relaxed_ns
    # the producer thread's own loop per k-block (lesson 3's stream producer): its empty-barrier wait finding the
    # phase complete, arrive.expect_tx, one TMA issue per copy (A and B, or A and half of B multicast), the branch
    producer = (t.wait_hit_ns + t.mbarrier_expect_tx_ns + 2 * t.tma_issue_ns + getattr(w, "loop", 0.0) / ghz
                if f.specialized else 0.0)
    # shared memory (f.smem: the SS wgmmas' reads and the TMA's writes against 32 banks × 4 B per SM clock); a
    # ping-pong TMA-store epilogue (stmatrix into the staging tile, the bulk store reading it) runs under the other
    # consumer's mainloop and shares it
    sm_bytes = f.smem_bytes + (2 * f.c_bytes / lay.k_blocks if f.pingpong and f.epilogue == "tma" else 0.0)
    # the bound: the TMA's writes weighed by smem_write_weight (1: every written byte takes a bank cycle from the
    # reads); the activity of the clock models: every byte
    bound_bytes = sm_bytes - (1.0 - p.smem_write_weight) * f.smem.writes * f.smem.tensor_cycles
    t_sm = bound_bytes / (f.smem.limit * ghz)
    # FP8 with a loaded scale latency: each wave's DRAM read bytes (new to L2) set its scale loads' latency
    loaded = (scale_read_bytes(f, int(M), int(N), int(K), sms, int(group), int(raster))
              if p.scale_load_ns_per_rate and f.promote and not f.scale_smem else None)
    if loaded is not None and p.scale_ws_gate:       # only a wave with a large working set loads them
        ws = wave_working_sets(f, int(M), int(N), int(K), sms, int(group), int(raster))
        loaded = tuple(b * scale_ws_factor(p, x) for b, x in zip(loaded, ws))
    waves = []
    first_it = None
    alike: dict = {}                   # a wave's answer depends on these alone: waves alike are computed once
    # a ping-pong wave out of step as a whole (delivery_waves): L2 delivers every requested byte, DRAM the in-step
    # reads where its working set fits in L2
    drift = (delivery_waves(f, int(M), int(N), int(K), sms, int(group), int(raster), int(window), p.delivery_pairs)
             if p.delivery_floor_tb_s > 0 and f.pingpong and window is not None else None)
    for wi, (active, dram, hit) in enumerate(dram_waves):
        floor = 0.0
        if drift is not None:
            d = drift[wi]
            if d.lonely > p.lonely_share:
                if d.working_set <= H200_SXM.l2_bytes:
                    dram = d.in_step_dram
                floor = d.set_kblock_bytes / (p.delivery_floor_tb_s * 1e3)
        same = (active, dram, hit, None if loaded is None else loaded[wi], floor)
        if same in alike:
            waves.append(alike[same])
            continue
        share = t.tma_bytes_per_ns if p.l2_bytes_per_ns <= 0 else min(t.tma_bytes_per_ns, p.l2_bytes_per_ns / active)
        t_x = f.tma_bytes / share
        t_h = dram / lay.k_blocks / read_rate

        def _bounds(itw, g=ghz):
            # a stage's round trip: the producer re-arms and issues, the bytes move and land, the consumers blocked
            # on it wake (lesson 3's wake, in place of the try_wait that finds a completed phase), hold it, give it
            # back
            ring = (t.mbarrier_expect_tx_ns + t.tma_issue_ns + f.tma_bytes / t.tma_bytes_per_ns + t.tma_latency_ns
                    + (1 - hit) * t.dram_latency_ns + t.wait_wake_ns + itw.hold / g - t.wait_hit_ns + arrive + remote)
            # the producer's own loop at the wave's clock (a form without a producer warp has none at any clock)
            prod = (producer if g == ghz or not f.specialized
                    else producer - getattr(w, "loop", 0.0) / ghz + getattr(w, "loop", 0.0) / g)
            b = {"tensor": itw.cycles / g, "tma": t_x, "hbm": t_h, "ring": ring / f.stages, "producer": prod,
                 "smem": t_sm * ghz / g * (active / sms if p.smem_shared else 1.0)}
            per = soft_period(b.values(), t)
            if floor > per:
                b["delivery"] = floor
                per = floor
            return b, per

        itw, lat = it, 0.0
        bounds, period = _bounds(itw)

        def _loaded(itw, bounds, period, g):
            if loaded is None:
                return itw, bounds, period, 0.0
            # the latency at the wave's read rate, which depends on the wave's period: a fixed point (4 rounds;
            # the latency moves the rate little)
            for _ in range(4):
                lat = scale_load_latency(p, loaded[wi] / (lay.k_blocks * period))
                itw = issue_timing(f, w, **_loop_args(f, p, g, lat))
                bounds, period = _bounds(itw, g)
            return itw, bounds, period, lat

        itw, bounds, period, lat = _loaded(itw, bounds, period, ghz)
        gw = ghz
        if p.form_clock:
            # the wave's clock from its own activity (form_clock_ratio): a fixed point with the period (5 rounds)
            for _ in range(5):
                gw = ghz * form_clock_ratio(p, sm_bytes / (period * gw), active, H200_SXM.sm_count, regime,
                                            f.smem.limit)
                itw = issue_timing(f, w, **_loop_args(f, p, gw))
                bounds, period = _bounds(itw, gw)
                itw, bounds, period, lat = _loaded(itw, bounds, period, gw)
        elif p.wave_clock:
            # the wave's clock under the power limit (wave_clock_ratio, the activity at the whole-wave clock's
            # period): the wave runs at ghz · r
            gw = ghz * wave_clock_ratio(p, sm_bytes / (period * ghz), active, H200_SXM.sm_count)
            if gw > ghz:
                itw = issue_timing(f, w, **_loop_args(f, p, gw))
                bounds, period = _bounds(itw, gw)
                itw, bounds, period, lat = _loaded(itw, bounds, period, gw)
        first_it = itw if first_it is None else first_it
        main = lay.k_blocks * period
        n_here = 2 if f.schedule == "pairs" else 1
        if f.pingpong:
            # the epilogue runs under the other consumer's next mainloop; without a group in flight the handoff
            # waits for the last wgmma
            exposed = max(0.0, epi - main) + (0.0 if f.inflight else drain)
        else:
            exposed = drain + epi
        waves.append(Wave(active, bounds, period, n_here, main, exposed, hit, lat, gw))
        alike[same] = waves[-1]
    first_active = lay.waves[0][0]
    b1 = min(t.tma_bytes_per_ns, hbm / max(first_active, 1))
    fill = (t.mbarrier_expect_tx_ns + t.tma_issue_ns + f.stage_bytes / b1 + t.tma_latency_ns + t.dram_latency_ns
            + t.wait_wake_ns)
    total = 0.0
    starts = 1
    if f.schedule == "persistent":
        total = fill + sum(wv.mainloop_ns + wv.exposed_ns for wv in waves)
        if f.pingpong:
            total += drain + epi           # the CTA's last tile: nothing left to hide its epilogue under
    else:
        starts = len(waves)
        hidden = False
        for wv in waves:
            if "delivery" in wv.bounds and p.delivery_pairs:
                # bound by L2 -> SM delivery: the SMs share one rate, so while a CTA fills or stores its tile the
                # others stream faster — the wave pays its bytes' delivery, its CTAs' fills and epilogues hidden
                total += wv.tiles * wv.mainloop_ns
                hidden = True
            else:
                total += fill + wv.tiles * wv.mainloop_ns + (wv.tiles - 1) * wv.exposed_ns + drain + epi
        if hidden:
            total += fill + drain + epi      # the first CTA's fill and the last one's epilogue stay exposed
    return Prediction(f, int(M), int(N), int(K), sms, int(group), int(raster), lay.grid, lay.tiles, lay.k_blocks,
                      lay.per_cta, ghz, regime, first_it if first_it is not None else it, fill, starts, epi, drain,
                      tuple(waves), total)


def _dram_waves(f: Form, M: int, N: int, K: int, sms: int, group: int, raster: int, p: PerfParams, lay: _Layout,
                dram_total: float | None) -> tuple:
    """(per wave of ``lay``: active CTAs, DRAM bytes, L2 hit rate; the rate its DRAM bound charges them at, B/ns).
    The layout's waves at lesson 5's read ceiling, or — with :attr:`PerfParams.tile_read_tb_s` on, for a persistent
    launch of a bf16 form that is not ping-pong — :func:`_capacity_waves` at that rate (an FP8 form keeps the in-step
    bytes: none was profiled launch by launch, and its scale loads' latency was fitted loaded by those bytes); with ``dram_total`` the bytes
    scaled so the launch reads that many, spread as the in-step waves (most waves alike: computed once), none above
    its requested bytes."""
    from ..sim.timing import read_ceiling

    waves, rate = lay.waves, read_ceiling(p.timing)
    if p.tile_read_tb_s > 0 and not f.pingpong and f.schedule == "persistent" and f.atype == "bf16":
        rate = p.tile_read_tb_s * 1e3
        if dram_total is None:
            waves = _capacity_waves(f, M, N, K, sms, group, raster, dict(p.form_drifts).get(f.name, p.capacity_drift),
                                    p.capacity_blocks)
    if dram_total is not None:
        if not dram_total >= 0:
            raise ValueError(f"dram_total = {dram_total}: DRAM bytes, >= 0")
        per = 2 if f.schedule == "pairs" else 1
        have = sum(d for _, d, _ in waves) * per
        scale = dram_total / have if have > 0 else 0.0
        out = []
        for a, d, h in waves:
            req = d / (1.0 - h) if h < 1.0 else 0.0
            x = min(req, d * scale) if req > 0 else 0.0
            out.append((a, x, 1.0 - x / req if req > 0 else h))
        waves = tuple(out)
    return waves, rate


@lru_cache(maxsize=256)
def _capacity_waves(f: Form, M: int, N: int, K: int, sms: int, group: int, raster: int, drift: float,
                    blocks: int = 0) -> tuple:
    """The waves of :func:`_layout` (in step) with the DRAM bytes of :func:`h100lab.design.traffic.capacity_reads` at
    ``drift`` (the L2's capacity, the CTAs drifting apart), each no more than the wave's requested bytes; with
    ``blocks`` > 0 the waves of each run of equal ``active`` cut into that many runs of consecutive waves, each at its
    run's mean bytes (the waves of a run alike: the model computes them once)."""
    from itertools import groupby

    import numpy as np

    from .traffic import capacity_reads

    lay = _layout(f, M, N, K, sms, group, raster)
    cap = [float(c) for c in capacity_reads(f, M, N, K, sms, group, raster, drift=drift)]
    start = 0
    for _, run in groupby(lay.waves, key=lambda w: w[0]) if blocks > 0 else ():   # the last wave may be partial
        n = len(list(run))
        for part in np.array_split(np.arange(start, start + n), min(blocks, n)):
            mean = sum(cap[k] for k in part) / len(part)
            for k in part:
                cap[k] = mean
        start += n
    out = []
    for (a, d, h), c in zip(lay.waves, cap):
        req = d / (1.0 - h)
        x = min(req, c)
        out.append((a, x, 1.0 - x / req))
    return tuple(out)


def predict_bytes(v, M: int, N: int, K: int, dram_bytes: float, *, sms: int | None = None, group: int = 8,
                  raster: int = 0, params: PerfParams | None = None, regime: str = "sustained") -> Prediction:
    """One launch of ``v`` (:func:`predict`'s arguments; the bytes spread over the waves as in step) that
    read ``dram_bytes`` from DRAM — the time model given a launch's measured bytes (Nsight Compute's
    ``dram__bytes_read``): what :func:`fit_tile_read` fits launch by launch and
    :func:`h100lab.validation.l08_reuse.time_link_rows` checks on held-out runs."""
    from ..specs import H200_SXM

    f = v if isinstance(v, Form) else form(v)
    p = params if params is not None else calibrated()
    sms = H200_SXM.sm_count if sms is None else int(sms)
    return _predict(f, int(M), int(N), int(K), sms, int(group), int(raster), p, regime, None, float(dram_bytes))


# ------------------------------------------------------------------------------------------------
# the gap to peak

#: the parts of :func:`gap_to_peak`, in plotting order, with their meaning
GAP_PARTS = {
    "clock": "the sustained tensor clock vs the datasheet's tensor clock",
    "waves": "SMs idle in a partial last wave (less what its higher clock gives back), and tile padding past M, N, K",
    "issue": "wgmma issue: per-instruction overhead, a lone warpgroup's waits, FP8 promotion",
    "tma": "the SM's TMA unit (L2 → shared memory) near the tensor-core bound",
    "smem": "shared-memory bandwidth (the TMA's writes and the wgmmas' operand reads) near the tensor-core bound",
    "hbm": "DRAM reads of the L2 misses",
    "ring": "the ring: a stage's round trip over too few stages, the producer's own loop",
    "epilogue": "epilogue and last-wgmma drain the tensor cores wait for",
    "fill": "the first stage's load at each CTA start",
}


@dataclass(frozen=True)
class Gap:
    """Predicted time = ``peak_us`` (2MNK at the datasheet's dense peak) + the ``parts`` (µs, :data:`GAP_PARTS`);
    ``total_us`` the prediction."""

    peak_us: float
    parts: dict
    total_us: float

    @property
    def lost_us(self) -> float:
        return self.total_us - self.peak_us


def gap_to_peak(v, M: int, N: int, K: int, *, sms: int | None = None, group: int = 8, raster: int = 0,
                params: PerfParams | None = None, regime: str = "sustained", spec=None) -> Gap:
    """The predicted time of :func:`predict` as the datasheet peak time plus named parts (µs), which sum to it
    exactly: ``clock`` = 2MNK / (SMs · peak MACs/clock · 2 · f) − peak time, less what the waves' own clocks
    (:attr:`Wave.clock_ghz`: a partial wave's is higher) give back; ``waves`` = the busiest CTA's tiles · k-blocks ·
    ideal k-block time at ``f`` − 2MNK at the sustained rate (idle SMs and tile padding: never negative, where under
    the form clock a partial wave of nearly every SM can run fast enough to more than repay its few idle ones);
    ``issue`` = its tensor-core period − ideal;
    ``tma``/``hbm``/``ring`` = the period's excess over the tensor-core bound, shared in proportion to each memory
    bound's k-th power (k = ``period_sharpness``); ``epilogue`` (exposed epilogue and drains) and ``fill``.
    ``spec``: the device (default :data:`h100lab.specs.H200_SXM`); its dense peak of the kernel's type."""
    from ..specs import H200_SXM
    from ..tensorcore.timing import RATE

    spec = H200_SXM if spec is None else spec
    pr = predict(v, M, N, K, sms=sms, group=group, raster=raster, params=params, regime=regime)
    f = pr.form
    p = params if params is not None else calibrated()
    k = p.timing.params["period_sharpness"].value if "period_sharpness" in p.timing.params else 0.0
    dtype = {"bf16": "bf16", "f16": "fp16", "e4m3": "fp8", "e5m2": "fp8"}[f.atype]
    flops = 2.0 * M * N * K
    peak_ns = flops / (spec.dense_tflops[dtype] * 1e3)
    sustained_ns = flops / (pr.sms * 2 * RATE[f.atype] * pr.clock_ghz)
    work_ns = sum(wv.tiles * pr.k_blocks * pr.issue.ideal / (wv.clock_ghz or pr.clock_ghz) for wv in pr.waves)
    whole_ns = sum(wv.tiles * pr.k_blocks * pr.issue.ideal / pr.clock_ghz for wv in pr.waves)  # every wave at f
    tc_ns = sum(wv.tiles * pr.k_blocks * wv.bounds["tensor"] for wv in pr.waves)   # = tiles · k · tc_kb (one chain)
    mem = {"tma": 0.0, "smem": 0.0, "hbm": 0.0, "ring": 0.0}
    for wv in pr.waves:
        excess = wv.tiles * pr.k_blocks * (wv.period_ns - wv.bounds["tensor"])
        part = {"tma": ("tma",), "smem": ("smem",), "hbm": ("hbm",), "ring": ("ring", "producer")}
        weights = {n: sum(wv.bounds[b] ** k if k > 0 else float(wv.bounds[b] == max(wv.bounds.values()))
                          for b in part[n]) for n in mem}
        tot = sum(weights.values())
        for n in mem:
            mem[n] += excess * (weights[n] / tot if tot else 0.0)
    fill = pr.fill_ns * pr.starts
    epi = pr.time_ns - fill - sum(wv.tiles * wv.mainloop_ns for wv in pr.waves)
    parts = {"clock": sustained_ns - peak_ns + work_ns - whole_ns, "waves": whole_ns - sustained_ns,
             "issue": tc_ns - work_ns,
             **mem, "epilogue": epi, "fill": fill}
    return Gap(peak_ns * 1e-3, {n: parts[n] * 1e-3 for n in GAP_PARTS}, pr.time_ns * 1e-3)


# ------------------------------------------------------------------------------------------------
# records, calibration

#: record kinds that hold a timed launch (``benchmarks/bench_gemm.py``: ``time``; its ``--fp8`` run: ``fp8_time``;
#: ``benchmarks/bench_gemm_steps.py --ablation``: ``ablation`` — a capstone variant in a named schedule and order)
TIME_KINDS = ("time", "fp8_time", "ablation")


#: the runs of the prospective test (``h100lab.validation.l08.fresh_rows``: every form at seven shapes never timed,
#: the predictions registered before the run, ``benchmarks/predictions/l08_gemm_fresh.json``): reported on their
#: own, against the registered predictions — not records of the campaign :func:`timing_datasets` lists; and the FP8
#: lead pair's run at eight more shapes (``h100lab.validation.l08_lead``: the working-set hypothesis's calls and the
#: model's times, ``benchmarks/predictions/l08_lead_ws.json``) and the FP8 fence test's at six more
#: (``h100lab.validation.l08_fence``, ``benchmarks/predictions/l08_fence.json``) and the FP8 issue window's round
#: (``h100lab.validation.l08_issue``)
PROSPECTIVE_DATASETS = tuple(f"l08/gemm_{r}{m}{p}" for r in ("fresh", "fresh2", "fresh3") for m in ("", "_fp8")
                             for p in ("", "_b")) + ("l08/gemm_lead_ws", "l08/gemm_lead_ws_b", "l08/gemm_fence",
                                                     "l08/gemm_fence_b", "l08/gemm_fence2", "l08/gemm_fence2_b",
                                                     "l08/gemm_fresh4_fp8", "l08/gemm_fresh4_fp8_b")


def timing_datasets() -> list[str]:
    """Every committed ``data/l08`` dataset holding timing records (:data:`TIME_KINDS`) but the prospective test's
    (:data:`PROSPECTIVE_DATASETS`): :data:`DATASETS` first, then the others (step-by-step kernels, FP8, fused
    epilogues, clusters — held out entirely) in name order."""
    from .. import data

    names = [n for n in DATASETS if data.available(n)]
    for n in data.names():
        if n.startswith("l08/") and n not in names and n not in PROSPECTIVE_DATASETS:
            if any(r.get("kind") in TIME_KINDS for r in data.load(n).records):
                names.append(n)
    return names


def _not_ours(r: dict) -> bool:
    who = str(r.get("variant", r.get("step", "")))
    return who.startswith(("cublas", "torch")) or r.get("library") is not None


def load_records(datasets: Iterable[str] | None = None) -> list[dict]:
    """The timing records (:data:`TIME_KINDS`, ``ok``, not a library's — cuBLAS, torch) of ``datasets`` (default
    :data:`DATASETS`), each with ``dataset`` (its dataset's name) and ``launches`` (warm-up + repeats) added. A
    missing dataset is skipped."""
    from .. import data

    out = []
    for name in (DATASETS if datasets is None else datasets):
        if data.available(name):
            out += timing_records_of(data.load(name))
    return out


def timing_records_of(ds) -> list[dict]:
    """The timing records of one loaded dataset ``ds`` (a :class:`h100lab.data.Dataset`) as :func:`load_records`
    gives them: :data:`TIME_KINDS`, ``ok``, not a library's, with ``dataset`` and ``launches`` added."""
    return [dict(r, dataset=ds.name, launches=int(r.get("warmup", 0)) + int(r.get("repeats", 1)))
            for r in ds.records
            if r.get("kind") in TIME_KINDS and not _not_ours(r) and r.get("ok", True) and "median_ms" in r]


#: the first bf16 tables and their five-process repeats (today's kernel: the first tables' 128 × 128 and ping-pong
#: forms ran an older epilogue, :func:`h100lab.validation.l08.kernel_ab_rows`)
TODAY_TABLES = {"l08/gemm_bench": "l08/gemm_bench_repeats", "l08/gemm_bench_tmastore": "l08/gemm_bench_tmastore_repeats"}


def todays_records(records: Sequence[dict]) -> list[dict]:
    """``records`` with each record of a :data:`TODAY_TABLES` table timed as the kernel that runs now: its
    ``median_ms`` the median of the repeats' medians of the same configuration (``first_ms``: the first table's),
    where the repeat table has it; every other record as it is."""
    from statistics import median

    from .. import data

    reps: dict = {}
    for table, rep in TODAY_TABLES.items():
        if not data.available(rep):
            continue
        for q in data.load(rep).records:
            if q.get("kind") == "repeat_time" and q.get("ok", True) and "median_ms" in q and not _not_ours(q):
                key = (table, q["variant"], q["M"], q["N"], q["K"], q.get("group", 8), q.get("raster", 0))
                reps.setdefault(key, []).append(float(q["median_ms"]))
    out = []
    for r in records:
        key = (r.get("dataset"), r.get("variant"), r["M"], r["N"], r["K"], r.get("group", 8), r.get("raster", 0))
        out.append(dict(r, first_ms=r["median_ms"], median_ms=median(reps[key])) if key in reps else r)
    return out


def record_form(r: dict) -> Form:
    """The :class:`Form` of a timing record: a step record (``step``: number or name) by its step, else the
    capstone variant it names."""
    if r.get("step") is not None:
        return step_form(r["step"])
    if r.get("schedule") is not None:
        return form(r["variant"], schedule=r["schedule"])
    f = form(r["variant"])
    if r.get("variant") in EARLY_SCALE_COPY.get(r.get("dataset"), ()):
        f = replace(f, scale_copy="wait")
    return f


def _record_order(r: dict) -> tuple[int, int]:
    if r.get("step") is not None and "group" not in r:
        from . import steps
        return steps.step(r["step"]).group, 0
    return r.get("group", 8), r.get("raster", 0)


def record_label(r: dict) -> str:
    """``M×N×K variant`` (+ ``group g, raster N`` off the default, + the dataset's short name)."""
    extra = ""
    if r.get("group", 8) != 8 or r.get("raster", 0) != 0:
        extra = f" group {r.get('group', 8)} raster {'MN'[r.get('raster', 0)]}"
    who = r.get("variant") if r.get("step") is None else f"step {r['step']}"
    if r.get("step") is None and r.get("schedule") is not None:
        who += f" ({r['schedule']})"
    return f"{r['M']}×{r['N']}×{r['K']} {who}{extra} [{r['dataset'].split('/')[-1]}]"


def predict_record(r: dict, params: PerfParams | None = None) -> Prediction:
    """:func:`predict` for a timing record: its variant (or step), shape, group, raster; a persistent launch on the
    record's ``grid`` (the benchmark gives clusters of two the CTA pairs the GPU can hold at once, which GPC
    granularity can make fewer than the SMs); the regime from its launches. A fused bias + ReLU epilogue
    (``epilogue``: ``bias_relu``) is predicted as the plain one ([model]: the bias loads and the max hide in the
    store)."""
    group, raster = _record_order(r)
    f = record_form(r)
    sms = int(r["grid"]) if f.schedule == "persistent" and r.get("grid") else None
    return predict(f, r["M"], r["N"], r["K"], sms=sms, group=group, raster=raster, params=params,
                   launches=r.get("launches"))


def calibration_part(r: dict) -> str | None:
    """``"sustained"`` for a record of :data:`CALIBRATION` (group 8, raster M), ``"throttled"`` for the record of
    :data:`THROTTLED_CALIBRATION`, ``"cluster"`` for that of :data:`CLUSTER_CALIBRATION`, ``"fp8_fence"`` for those
    the model's FP8 fence is fitted on (:func:`fp8_fence_calibration`), ``"scale"`` for that of :data:`SCALE_CALIBRATION`, else None (held out)."""
    if r.get("group", 8) != 8 or r.get("raster", 0) != 0 or "variant" not in r or r.get("step") is not None:
        return None
    shape = (r["M"], r["N"], r["K"])
    if (r.get("dataset"), r["variant"], shape) in CALIBRATION:
        return "sustained"
    if (r.get("dataset"), r["variant"], shape) in THROTTLED_CALIBRATION:
        return "throttled"
    if (r.get("dataset"), r["variant"], shape) in CLUSTER_CALIBRATION:
        return "cluster"
    if (r.get("dataset"), r["variant"], shape) in fp8_fence_calibration():
        return "fp8_fence"
    if (r.get("dataset"), r["variant"], shape) in SCALE_CALIBRATION:
        return "scale"
    return None


def is_calibration(r: dict) -> bool:
    """Whether a record is in the calibration subset: cooperative (``l08/gemm_bench``) and
    cooperative_inflight_tmastore (``l08/gemm_bench_tmastore``) at 4096³ and 8192³ (group 8, raster M), and
    cooperative at 16384³ of ``l08/gemm_bench`` (the throttled clock), and cooperative_inflight_cluster2 at 8192³ of
    ``l08/gemm_bench_cluster2`` (the cluster pair's fence), the two FP8 pairs at 6144 × 10240 × 8192 of
    ``l08/gemm_fence`` (the FP8 pair's fence: :data:`FP8_FENCE_SPLIT_CALIBRATION`). The other FP8 constants come
    from the k-block trace run (:data:`TRACE_DATASET`, whose records are not timing records: :func:`trace_constants`, :data:`SCALE_CALIBRATION`).
    Every other record is held out — the other variants, shapes and tile orders of those runs and every record of
    any other dataset, every FP8 throughput record included."""
    return calibration_part(r) is not None


def trace_overhead(r: dict) -> float:
    """The trace's own cost per event, in SM cycles, of a record of :data:`TRACE_DATASET`: (traced − untraced median
    time) × the clock the trace read / (k-blocks of the busiest traced warpgroup × events per k-block: 7 for FP8, 4
    for bf16) — [assumption: every event costs the same and lands in the interval it ends]."""
    ws = r["warpgroups"]
    mhz = sorted(w["clock_mhz"] for w in ws)[len(ws) // 2]
    blocks = max(w["blocks"] for w in ws)
    events = 7 if r.get("dtype", "bf16") != "bf16" else 4
    return (r["traced_median_ms"] - r["median_ms"]) * mhz * 1e3 / blocks / events


def _consumer_median(r: dict, key: str) -> float:
    xs = sorted(w["cycles"][key]["median"] for w in r["warpgroups"] if w["role"] == "consumer")
    return float(xs[len(xs) // 2])


def trace_constants(records: Sequence[dict]) -> dict:
    """The FP8 consumer's chain read off the k-block trace (records of :data:`TRACE_DATASET` at
    :data:`TRACE_SHAPE`, ``ok``), in SM cycles, each interval the median over the traced consumers less the trace's
    cost per event (:func:`trace_overhead`): ``fp8_issue_cycles`` — full-barrier pass to commit (the group's
    ``wgmma.fence``, descriptors, wgmmas and commit; the try_wait itself ends before the first event) of the
    scale-ring (lead ≥ 2) forms, whose loads are not in that window (mean over their tiles);
    ``fp8_scale_issue_cycles`` — what lead 1's window holds more (its next
    block's loads, issued after the group; mean over the tile widths); ``fp8_ring_issue_cycles`` — promotion done
    to the ring's loads issued (lead ≥ 2); ``fp8_promote`` — the promotion (scales in registers to promotion done)
    of the lead ≥ 2 forms per tile N (lead 1's promotion also holds the wait for the next block's loads, charged
    apart). Raises ValueError when the records lack a lead-1 and a lead-2 form of the same tile."""
    fp8 = [r for r in records if r.get("ok") and r.get("dtype", "bf16") != "bf16" and "warpgroups" in r
           and (r["M"], r["N"], r["K"]) == TRACE_SHAPE and r.get("bm", 128) == 128]
    ring = [r for r in fp8 if r.get("scale_lead", 1) > 1]
    one = [r for r in fp8 if r.get("scale_lead", 1) == 1]
    pairs = [(a, b) for a in one for b in ring if a["bn"] == b["bn"]]
    if not ring or not pairs:
        raise ValueError(f"the FP8 chain needs trace records ({TRACE_DATASET}, {TRACE_SHAPE}) of a lead-1 and a "
                         "lead-2 form of the same tile")
    clean = lambda r, k: _consumer_median(r, k) - trace_overhead(r)          # noqa: E731
    mean = lambda xs: sum(xs) / len(xs)                                      # noqa: E731
    promote: dict = {}
    for r in ring:
        promote.setdefault(r["bn"], []).append(clean(r, "promote"))
    return {"fp8_issue_cycles": mean([clean(r, "issue") for r in ring]),
            "fp8_scale_issue_cycles": mean([clean(a, "issue") - clean(b, "issue") for a, b in pairs]),
            "fp8_ring_issue_cycles": mean([clean(r, "next") for r in ring]),
            "fp8_promote": tuple(sorted((bn, mean(v)) for bn, v in promote.items()))}


def _trace_record(r: dict) -> dict:
    """A trace record as a timing record (its untraced median, grid and launches) for :func:`predict_record`."""
    return {"variant": r["variant"], "M": r["M"], "N": r["N"], "K": r["K"], "median_ms": r["median_ms"],
            "grid": r["grid"], "group": 8, "raster": 0, "dataset": TRACE_DATASET,
            "launches": int(r.get("warmup", 0)) + int(r.get("repeats", 1))}


def trace_clock_ghz(r: dict) -> float:
    """The SM clock a trace record read (clock64 over globaltimer, the median over its traced warpgroups), GHz."""
    ws = r["warpgroups"]
    return sorted(w["clock_mhz"] for w in ws)[len(ws) // 2] / 1000.0


def calibrate(records: Sequence[dict], *, wgmma=None, timing=None, fit_l2: bool = False,
              trace: Sequence[dict] | None = None, scale: Sequence[dict] | None = None,
              smem_shared: bool = False, wave_clock: tuple = (), form_clock: tuple = (),
              smem_write_weight: float = 1.0) -> PerfParams:
    """Fit the model's constants on the calibration subset of ``records`` (:func:`is_calibration`; records carry
    ``dataset`` and ``launches`` as :func:`load_records` gives them): ``tensor_ghz`` and
    ``direct_store_bytes_per_ns`` by robust least squares (:func:`h100lab.validation.fit.least_squares`, log
    ratios of the median times) on the sustained part, then ``throttled_ghz`` on the throttled part with those
    fixed; ``long_run_ms`` = the geometric mean of the longest sustained calibration run and the shortest throttled
    one (launches × median). ``wgmma``: lesson 7's constants (default :func:`h100lab.tensorcore.timing.calibrated`);
    ``timing``: memory model 2 (default :func:`h100lab.validation.timing.fit` on the committed datasets).
    ``fit_l2``: also fit the L2 share at full load (``l2_bytes_per_ns``) on the sustained part — off by default:
    with the shared-memory bound the fit puts it near one SM's TMA rate and every held-out figure is the same
    without it (``tests/test_l08_perf.py`` checks both). ``trace``: the records of :data:`TRACE_DATASET` — the FP8
    chain (:func:`trace_constants`); ``scale``: the trace records of :data:`SCALE_CALIBRATION` (:func:`scale_records`:
    each with its ``dataset``; default: ``trace``'s and the committed records of the subset's other datasets) —
    ``scale_load_ns`` from their untraced
    times at their traces' clocks, and with two shapes or more ``scale_load_ns_per_rate`` too; None leaves the FP8
    chain at lesson 7's issue and one FFMA per clock with no scale load. ``smem_shared``: every fit with the
    shared-memory bound shared by a wave's active CTAs (:attr:`PerfParams.smem_shared`); ``wave_clock``: every fit
    with the per-wave clock (:attr:`PerfParams.wave_clock`, :func:`wave_clock_constants`); ``form_clock`` (``c0``,
    ``c1``, :func:`form_clock_constants`): every wave at its own activity's clock, so no clock is fitted on a time —
    ``tensor_ghz`` is then the clock at ``a`` = 1 (:func:`form_clock_ratio`), the sustained records fit
    ``direct_store_bytes_per_ns`` alone; ``smem_write_weight``: :attr:`PerfParams.smem_write_weight`. Raises
    ValueError without sustained calibration records."""
    import numpy as np

    from ..specs import H200_SXM
    from ..tensorcore import timing as wt
    from ..validation.fit import FitParam, least_squares, log_ratio

    w = wgmma if wgmma is not None else wt.calibrated()
    tt = timing if timing is not None else _memory_timing()
    sus = [r for r in records if calibration_part(r) == "sustained"]
    thr = [r for r in records if calibration_part(r) == "throttled"]
    if not sus:
        raise ValueError("calibrating the capstone's time model needs the records of CALIBRATION (data/l08)")
    base = PerfParams(1.5, 1.5, 50.0, math.inf, w, tt, smem_shared=bool(smem_shared), wave_clock=tuple(wave_clock),
                      form_clock=tuple(form_clock), smem_write_weight=float(smem_write_weight))

    def res(vals):
        p = replace(base, tensor_ghz=vals["tensor_ghz"], direct_store_bytes_per_ns=vals["direct"],
                    l2_bytes_per_ns=vals.get("l2", 0.0))
        return [log_ratio(predict(record_form(r), r["M"], r["N"], r["K"], params=p).time_ms, r["median_ms"])
                for r in sus]

    sms = H200_SXM.sm_count
    one = tt.tma_bytes_per_ns                 # the share cannot exceed what one SM's TMA unit moves alone
    free = [FitParam("tensor_ghz", 1.5, 0.5, 3.0), FitParam("direct", 50.0, 1.0, 2000.0)]
    nominal = {}
    if form_clock:                  # the clocks come from the form clock: the times fit the direct stores alone
        nominal = {"tensor_ghz": 1.0 / (form_clock[0] + form_clock[1])}
        free = free[1:]
    if fit_l2:
        free.append(FitParam("share", 0.75 * one, 0.1 * one, one))
    fit = least_squares(lambda v: np.array(res({**nominal, **v, "l2": v["share"] * sms} if "share" in v
                                               else {**nominal, **v})), free)
    ghz, direct = fit.values.get("tensor_ghz", nominal.get("tensor_ghz")), fit.values["direct"]
    share = fit.values.get("share", one)
    binding = share < 0.999 * one
    p = replace(base, tensor_ghz=ghz, throttled_ghz=ghz, direct_store_bytes_per_ns=direct,
                l2_bytes_per_ns=share * sms if binding else 0.0)
    notes = [f"sustained: {len(sus)} records, residuals " + ", ".join(f"{x:+.3f}" for x in fit.residuals),
             (f"L2 → SM share at full load: {share:.1f} B/ns per SM ({share * sms / 1e3:.1f} TB/s device-wide)"
              if binding else f"the L2 share never binds: one SM's TMA rate ({one:.1f} B/ns) is the limit")]
    long_ms = math.inf
    if thr:
        def res2(vals):
            q = replace(p, throttled_ghz=vals["throttled_ghz"])
            return np.array([log_ratio(predict(record_form(r), r["M"], r["N"], r["K"], params=q,
                                               regime="throttled").time_ms, r["median_ms"]) for r in thr])
        fit2 = least_squares(res2, [FitParam("throttled_ghz", ghz, 0.3, 3.0)])
        sus_run = max(run_ms(r["median_ms"], r["launches"]) for r in sus)
        thr_run = min(run_ms(r["median_ms"], r["launches"]) for r in thr)
        long_ms = math.sqrt(sus_run * thr_run)
        p = replace(p, throttled_ghz=fit2.values["throttled_ghz"])
        notes.append(f"throttled: {len(thr)} record(s), residual " + ", ".join(f"{x:+.3f}" for x in fit2.residuals)
                     + f"; long runs from {long_ms:.0f} ms (sustained calibration runs ≤ {sus_run:.0f} ms, "
                       f"throttled ≥ {thr_run:.0f} ms)")
    p = replace(p, long_run_ms=long_ms)
    clu = [r for r in records if calibration_part(r) == "cluster"]
    if clu:
        def res3(vals):
            q = replace(p, cluster_fence_ns=vals["fence"])
            return np.array([log_ratio(predict_record(r, q).time_ms, r["median_ms"]) for r in clu])
        base_fence = tt.cluster_arrive_release_ns + tt.cluster_arrive_release_per_warp_ns * 4
        fit3 = least_squares(res3, [FitParam("fence", base_fence, 1.0, 20000.0)])
        p = replace(p, cluster_fence_ns=fit3.values["fence"])
        notes.append(f"cluster pair's release.cluster arrive in the k-block loop: {fit3.values['fence']:.0f} ns "
                     f"(lesson 3, unloaded: {base_fence:.0f} ns); residual "
                     + ", ".join(f"{x:+.3f}" for x in fit3.residuals))
    sca = []
    if trace:
        chain = trace_constants(trace)
        p = replace(p, **chain)
        notes.append("FP8 consumer chain from the k-block trace (cycles, trace cost taken out): group issue "
                     f"{chain['fp8_issue_cycles']:.0f}, lead-1 scale-load issue {chain['fp8_scale_issue_cycles']:.0f}, "
                     f"ring load issue {chain['fp8_ring_issue_cycles']:.0f}, promotion "
                     + ", ".join(f"N={n}: {c:.0f}" for n, c in chain["fp8_promote"]))
        if scale is None:      # the trace's own records, and the committed ones of the subset's other datasets
            scale = [dict(r, dataset=TRACE_DATASET) for r in trace] + [
                r for r in scale_records() if r["dataset"] != TRACE_DATASET]
        want = set(SCALE_CALIBRATION)
        sca = [r for r in scale if r.get("ok") and "warpgroups" in r
               and (r.get("dataset"), r["variant"], (r["M"], r["N"], r["K"])) in want]
    if sca:
        def res4(vals):
            out = []
            for r in sca:
                ghz = trace_clock_ghz(r)
                q = replace(p, scale_load_ns=vals["load"], scale_load_ns_per_rate=vals.get("per_rate", 0.0),
                            tensor_ghz=ghz, throttled_ghz=ghz, form_clock=())
                out.append(log_ratio(predict(record_form(_trace_record(r)), r["M"], r["N"], r["K"], sms=r["grid"],
                                             params=q).time_ms, r["median_ms"]))
            return np.array(out)
        shapes = {(r["M"], r["N"], r["K"]) for r in sca}
        free4 = [FitParam("load", 300.0, 1.0, 5000.0)]
        if len(shapes) >= 2:                 # two loads: the latency's growth with the wave's DRAM read rate too
            free4.append(FitParam("per_rate", 0.1, 1e-4, 5.0))
        fit4 = least_squares(res4, free4)
        p = replace(p, scale_load_ns=fit4.values["load"], scale_load_ns_per_rate=fit4.values.get("per_rate", 0.0))
        l2 = unloaded_l2_hit_ns()
        notes.append(f"FP8 lead-1 scale loads, issue to the copies' wait: {fit4.values['load']:.0f} ns "
                     + (f"+ {fit4.values['per_rate']:.3f} ns per B/ns of the wave's DRAM reads "
                        if "per_rate" in fit4.values else "")
                     + (f"(lesson 1's unloaded L2 hit: {l2:.0f} ns)" if l2 else "") + "; residual "
                     + ", ".join(f"{x:+.3f}" for x in fit4.residuals))
    src = ("tensor_ghz, direct_store_bytes_per_ns: robust least squares on "
           + "; ".join(f"{v} at {s[0]}x{s[1]}x{s[2]} ({d})" for d, v, s in CALIBRATION)
           + " (data/l08, group 8, raster M)"
           + ("; throttled_ghz: " + "; ".join(f"{v} at {s[0]}x{s[1]}x{s[2]} ({d})" for d, v, s in THROTTLED_CALIBRATION)
              if thr else "")
           + ("; cluster_fence_ns: "
              + "; ".join(f"{v} at {s[0]}x{s[1]}x{s[2]} ({d})" for d, v, s in CLUSTER_CALIBRATION) if clu else "")
           + (f"; FP8 chain: the FP8 records of {TRACE_DATASET} at {'x'.join(map(str, TRACE_SHAPE))}" if trace else "")
           + ("; scale_load_ns" + (", scale_load_ns_per_rate" if len(sca) > 1 else "") + ": "
              + "; ".join(f"{r['variant']} at {r['M']}x{r['N']}x{r['K']} ({r['dataset']}, untraced, at the trace's "
                          "clock)" for r in sca) if sca else "")
           + (f"; wave_clock (budget {wave_clock[0]:.0f} B/ns of shared-memory traffic, cap {wave_clock[1]:.2f} GHz): "
              "the whole- and partial-wave clocks of the k-block traces of "
              + "; ".join(f"{v} at {s[0]}x{s[1]}x{s[2]} ({d})" for d, v, s in WAVE_CLOCK_CALIBRATION) if wave_clock
              else "")
           + (f"; form_clock (c0 {form_clock[0]:.4f}, c1 {form_clock[1]:.4f} per GHz): Nsight Compute's clocks of "
              f"{FORM_CLOCK_DATASET} at " + ", ".join("x".join(map(str, x)) for x in FORM_CLOCK_SHAPES)
              + f"; smem_write_weight {smem_write_weight:.2f}: its cycles" if form_clock else "")
           + "; wgmma: h100lab.tensorcore.timing.calibrated(); copies: h100lab.validation.timing.fit()")
    return replace(p, source=src, notes=tuple(notes))


_MEMO: dict = {}


def unloaded_l2_hit_ns() -> float | None:
    """Lesson 1's unloaded L2 hit: the L2 rung of the latency ladder (``data/l01/latency_ladder``, one thread's
    dependent chase, :func:`h100lab.validation.l01.ladder_rows`) in ns; None without that dataset. What
    ``scale_load_ns`` is compared with (the same kind of load, here under the kernel's TMA and wgmma traffic)."""
    from .. import data
    from ..validation import l01

    if not data.available("l01/latency_ladder"):
        return None
    row = next((r for r in l01.ladder_rows(data.load("l01/latency_ladder").records) if r["level"] == "L2"), None)
    return None if row is None or row["latency (ns)"] is None else float(row["latency (ns)"])


def scale_records(subset: Sequence = None) -> list[dict]:
    """The committed trace records ``subset`` (default :data:`SCALE_CALIBRATION`) names, each with ``dataset`` added
    (a dataset not committed: none of its records)."""
    from .. import data

    subset = SCALE_CALIBRATION if subset is None else subset
    out = []
    for name in dict.fromkeys(d for d, _, _ in subset):
        if data.available(name):
            want = {(v, s) for d, v, s in subset if d == name}
            out += [dict(r, dataset=name) for r in data.load(name).records
                    if (r.get("variant"), (r.get("M"), r.get("N"), r.get("K"))) in want]
    return out


def _memory_timing():
    """Memory model 2 fitted on the committed datasets by :func:`h100lab.validation.timing.fit` (once per process).
    Raises ValueError when its datasets are missing."""
    if "timing" not in _MEMO:
        from ..validation import timing as vt
        _MEMO["timing"] = vt.fit().timing
    return _MEMO["timing"]


#: the k-block trace records the per-wave clock (:attr:`PerfParams.wave_clock`) is calibrated on: (dataset, variant,
#: (M, N, K)) — the two bf16 forms traced at 1280 × 3840 × 8192, whose traced CTAs 0 and 66 run 2 + 1 and 1 + 1
#: (128 × 256: 132 + 18 CTAs) or 3 and 2 tiles (128 × 128: 2 × 132 + 36): CTA 66's clock (cycles over globaltimer
#: of its whole run) is the whole waves' clock, the difference of the two CTAs' runs the partial wave's. No timing
#: record (every one stays held out); the FP8 traces are the test of what it says of FP8
WAVE_CLOCK_CALIBRATION = (("l08/gemm_trace", "cooperative_inflight_tmastore", (1280, 3840, 8192)),
                          ("l08/gemm_trace_forms", "cooperative_n128_inflight_tmastore", (1280, 3840, 8192)))


def wave_clock_rows(subset: Sequence | None = None, params: PerfParams | None = None) -> list[dict]:
    """Per trace record of ``subset`` (default :data:`WAVE_CLOCK_CALIBRATION`; a missing dataset: none of its rows)
    whose two traced CTAs differ in tiles: ``full_ghz`` (the CTA with fewer tiles: whole waves only), ``last_ghz``
    (the difference of the two CTAs' cycles over the difference of their times: the partial wave), ``activity``
    (the model's shared-memory bytes per clock of the form's first wave, :func:`wave_clock_ratio`) and ``budget``
    = ``full_ghz`` × ``activity``."""
    from .. import data

    p = params if params is not None else calibrated()
    out = []
    for name, v, shape in (WAVE_CLOCK_CALIBRATION if subset is None else subset):
        if not data.available(name):
            continue
        for r in data.load(name).records:
            if r.get("variant") != v or (r.get("M"), r.get("N"), r.get("K")) != tuple(shape) or not r.get("warpgroups"):
                continue
            pro = sorted((w for w in r["warpgroups"] if w["role"] == "producer"), key=lambda w: w["tiles"])
            lo, hi = pro[0], pro[-1]
            if lo["tiles"] == hi["tiles"]:
                continue
            f = record_form(dict(r, dataset=name))
            q = replace(p, wave_clock=())
            pr = predict(f, *shape, sms=r["grid"], params=q)
            act = f.smem_bytes / (pr.waves[0].period_ns * pr.clock_ghz)
            full = lo["run_cycles"] / lo["run_ns"]
            out.append({"dataset": name, "variant": v, "shape": tuple(shape), "full_ghz": full,
                        "last_ghz": (hi["run_cycles"] - lo["run_cycles"]) / (hi["run_ns"] - lo["run_ns"]),
                        "last_ctas": r["tiles"] % r["grid"], "activity": act, "budget": full * act})
    return out


def wave_clock_constants(params: PerfParams | None = None) -> tuple:
    """(``budget``, ``cap_ghz``) of :attr:`PerfParams.wave_clock` from :func:`wave_clock_rows` of
    :data:`WAVE_CLOCK_CALIBRATION`: the mean budget and the mean partial-wave clock. () without those records."""
    rows = wave_clock_rows(params=params)
    if not rows:
        return ()
    return (sum(r["budget"] for r in rows) / len(rows), sum(r["last_ghz"] for r in rows) / len(rows))


#: the Nsight Compute run of every bf16 form (``benchmarks/ncu_gemm_forms.py``) and the shapes of it the form clock
#: and the write weight are fitted on (:func:`form_clock_constants`, :func:`smem_write_weight_fit`): 4096³ and
#: 8192³ (18 forms × shapes); its 1280 × 3840 × 8192, 1408 × 3072 × 8192 and 16384³ launches are held out
FORM_CLOCK_DATASET = "l08/gemm_ncu_forms"
#: the FP8 forms under Nsight Compute: the form-clock hypothesis fits the FP8 scale loads' latency on their cycles at
#: :data:`FORM_CLOCK_SHAPES` (:func:`_fit_scale_on_cycles`); the rest held out
FORM_CLOCK_FP8_DATASET = "l08/gemm_ncu_forms_fp8"
FORM_CLOCK_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))
#: the write weights :func:`smem_write_weight_fit` tries
SMEM_WRITE_WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))


def form_counter_means(records: Iterable[dict], shapes: Sequence | None = None) -> dict:
    """{(variant, M, N, K, grid): {``launches``, and the mean of every counter of its launches}} of the ``ncu_form``
    records (``benchmarks/ncu_gemm_forms.py``) at ``shapes`` (None: every shape)."""
    want = None if shapes is None else set(map(tuple, shapes))
    acc: dict = {}
    for r in records:
        if r.get("kind") == "ncu_form" and (want is None or (r["M"], r["N"], r["K"]) in want):
            acc.setdefault((r["variant"], r["M"], r["N"], r["K"], r.get("grid")), []).append(r["metrics"])
    return {k: {"launches": len(ms), **{m: sum(x[m] for x in ms) / len(ms) for m in ms[0]}} for k, ms in acc.items()}


def _form_counters(dataset: str = FORM_CLOCK_DATASET, shapes: Sequence = FORM_CLOCK_SHAPES) -> dict:
    """:func:`form_counter_means` of a committed Nsight Compute forms run at ``shapes``; {} without it."""
    from .. import data

    return form_counter_means(data.load(dataset).records, shapes) if data.available(dataset) else {}


def form_clock_constants(shapes: Sequence = FORM_CLOCK_SHAPES) -> tuple:
    """(``c0``, ``c1``) of :attr:`PerfParams.form_clock`: least squares of ``1 / f = c0 + c1 · a`` over the launches
    of :data:`FORM_CLOCK_DATASET` at ``shapes`` (whole waves but a last partial one), ``f`` the clock Nsight Compute
    read (``gpc__cycles_elapsed.max.per_second``), ``a`` the form's shared-memory bytes per clock at the dense rate
    over 128 (:func:`h100lab.design.tiles.smem_bytes_per_clock`) × the tensor pipe's busy fraction it read — from the
    counters alone, no time and no model period. () without the dataset."""
    import numpy as np

    rows = _form_counters(shapes=shapes)
    if not rows:
        return ()
    A, y = [], []
    for (v, *_), c in rows.items():
        sm = form(v).smem
        A.append((1.0, sm.total / sm.limit * c["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"] / 100))
        y.append(1e9 / c["gpc__cycles_elapsed.max.per_second"])
    c, *_ = np.linalg.lstsq(np.array(A), np.array(y), rcond=None)
    return (float(c[0]), float(c[1]))


def launch_mcycles(pr: Prediction) -> float:
    """A prediction's SM cycles (millions): each wave's mainloop and exposed epilogue at its own clock, the fill,
    and a ping-pong CTA's last epilogue — what Nsight Compute's ``gpc__cycles_elapsed.max`` counts."""
    cyc = pr.fill_ns * pr.clock_ghz + sum((wv.mainloop_ns + wv.exposed_ns) * (wv.clock_ghz or pr.clock_ghz)
                                          for wv in pr.waves)
    if pr.form.pingpong:
        cyc += (pr.drain_ns + pr.epilogue_ns) * pr.clock_ghz
    return cyc * 1e-6


def _model_mcycles(f: Form, M: int, N: int, K: int, p: PerfParams, sms: int | None = None) -> float:
    """:func:`launch_mcycles` of one launch of ``f`` on ``sms`` CTAs (default every SM)."""
    return launch_mcycles(predict(f, M, N, K, sms=sms, params=p, launches=1))


def _cycle_residuals(rows: dict, p: PerfParams) -> list:
    """log(model / Nsight Compute) of the SM cycles of each launch of ``rows`` (:func:`form_counter_means`)."""
    return [math.log(_model_mcycles(form(v), M, N, K, p, g) / (c["gpc__cycles_elapsed.max"] * 1e-6))
            for (v, M, N, K, g), c in rows.items()]


def smem_write_weight_fit(p: PerfParams, shapes: Sequence = FORM_CLOCK_SHAPES) -> tuple:
    """(ω, rms): the :attr:`PerfParams.smem_write_weight` of :data:`SMEM_WRITE_WEIGHTS` whose model cycles
    (:func:`_model_mcycles`, ``p`` with that weight) match Nsight Compute's (``gpc__cycles_elapsed.max``) of
    :data:`FORM_CLOCK_DATASET` at ``shapes`` best (least root-mean-square log ratio) — cycles, not times, so the
    clock does not enter. (1.0, nan) without the dataset."""
    rows = _form_counters(shapes=shapes)
    if not rows:
        return 1.0, math.nan
    best = None
    for om in SMEM_WRITE_WEIGHTS:
        e = _cycle_residuals(rows, replace(p, smem_write_weight=om))
        rms = math.sqrt(sum(x * x for x in e) / len(e))
        if best is None or rms < best[1] - 1e-12:
            best = (om, rms)
    return best


def _fit_inputs(w, tt, extra: Sequence[str] = ()) -> list:
    """What the model's fit reads besides the package's code (the key of its :mod:`h100lab.fitcache` entry): the
    bytes of every committed dataset :func:`calibrated` loads (:data:`DATASETS`, :data:`CLUSTER_CALIBRATION`'s,
    :data:`TRACE_DATASET`, :data:`SCALE_CALIBRATION`'s, :data:`WAVE_CLOCK_CALIBRATION`'s, lesson 1's latency
    ladder, and ``extra``; an absent one as None) and the lesson-7 and memory-model constants it starts from."""
    import hashlib

    from .. import data

    names = (DATASETS + tuple(d for d, _, _ in CLUSTER_CALIBRATION) + (TRACE_DATASET,)
             + tuple(d for d, _, _ in SCALE_CALIBRATION) + tuple(d for d, _, _ in WAVE_CLOCK_CALIBRATION)
             + ("l01/latency_ladder",) + tuple(extra))
    files = {n: (hashlib.sha256(data._path(n).read_bytes()).hexdigest() if data.available(n) else None)
             for n in dict.fromkeys(names)}
    return [files, repr(w), repr(tt)]


def _fit_model() -> tuple:
    """(the model's constants, the same fit without the per-wave clock): :func:`calibrate` on the committed
    calibration records without :attr:`PerfParams.wave_clock`; the wave clock's two constants from the k-block
    traces at that fit's activity (:func:`wave_clock_constants`); every constant refitted with it on the same
    subset; the wave clock's constants read again at the refitted clock and everything refitted once more; each
    then with its own reuse window (:func:`_with_window`) and its own FP8 pair's fence (:func:`_fit_fp8_fence`).
    Every fit runs with the ping-pong forms in step
    (:attr:`PerfParams.reuse_window` None)."""
    from .. import data
    from ..tensorcore import timing as wt

    extra = tuple(dict.fromkeys(d for d, _, _ in CLUSTER_CALIBRATION))
    trace = data.load(TRACE_DATASET).records if data.available(TRACE_DATASET) else None
    w, tt = wt.calibrated(), _memory_timing()

    def fit():
        recs = load_records(DATASETS + extra)
        plain = calibrate(recs, wgmma=w, timing=tt, trace=trace)
        wc = wave_clock_constants(plain)
        if not wc:
            plain = _with_tile_reads(_fit_fp8_fence(_with_window(plain)))
            return plain, plain
        q = calibrate(recs, wgmma=w, timing=tt, trace=trace, wave_clock=wc)
        q = calibrate(recs, wgmma=w, timing=tt, trace=trace, wave_clock=wave_clock_constants(q))
        return (_with_tile_reads(_fit_fp8_fence(_with_window(q))),
                _with_tile_reads(_fit_fp8_fence(_with_window(plain))))

    from .. import fitcache
    return fitcache.memo("l08_perf_params", _fit_inputs(w, tt, _window_inputs() + _fence_inputs()), fit)


def _fence_inputs() -> tuple:
    """The datasets the model's FP8 fence is fitted on (:func:`_fit_fp8_fence`)."""
    return tuple(dict.fromkeys(d for d, _, _ in fp8_fence_calibration()))


def _window_inputs() -> tuple:
    from .traffic import FORM_DRIFT_DATASET, L2_DATASET, ORDERS_DATASET
    return (ORDERS_DATASET, L2_DATASET, FORM_DRIFT_DATASET)


def _with_window(p: PerfParams) -> PerfParams:
    """``p`` with its ping-pong reuse window (:attr:`PerfParams.reuse_window`): the window of
    :data:`h100lab.design.traffic.WINDOWS` that puts the most of the order sweep's calibration records within ±10 %
    with ``p``'s constants (:func:`h100lab.design.traffic.fit_window_for`; ties: the smallest median |error|) — fitted
    after the time constants, with them, so each model has its own."""
    from .traffic import fit_lonely_share, fit_window_for, lrc_ceiling_tb_s
    # the window without the delivery bound first (the bound needs a window to say which reads are lonely), the
    # bound's threshold with it, then the window again with the bound on
    w0 = fit_window_for(p)
    ceiling = lrc_ceiling_tb_s()
    lonely = fit_lonely_share(window=w0) if w0 is not None else None
    q = (replace(p, delivery_floor_tb_s=ceiling, lonely_share=lonely) if ceiling == ceiling and lonely is not None
         else p)
    w = fit_window_for(q)
    return replace(q, reuse_window=w, notes=q.notes + (
        f"reuse window of the ping-pong forms: {w} CTAs (l08/gemm_orders, the ping-pong form at 8192³ in every tile "
        f"order)",))


#: the range (TB/s) :func:`fit_tile_read` searches
TILE_READ_RANGE = (2.0, 6.0)


def tile_read_rows(p: PerfParams, dataset: str | None = None) -> list[dict]:
    """Per launch of ``dataset``'s persistent cooperative runs profiled launch by launch (default
    :data:`h100lab.design.traffic.FORM_DRIFT_DATASET`; :func:`h100lab.design.traffic.launch_runs`): ``variant``,
    ``shape``, ``bytes`` and ``ms`` (Nsight Compute's DRAM bytes and duration of the launch), ``model_ms``
    (:func:`predict_bytes`: one launch at the sustained clock that read those bytes, with ``p``) and ``error``."""
    from .traffic import FORM_DRIFT_DATASET, is_cooperative_run, launch_runs

    out = []
    for r in filter(is_cooperative_run, launch_runs(FORM_DRIFT_DATASET if dataset is None else dataset)):
        for b, ms in zip(r["launch_bytes"], r["launch_ms"]):
            t = predict_bytes(r["variant"], r["M"], r["N"], r["K"], b, sms=r["grid"], group=r["group"],
                              raster=r["raster"], params=p).time_ms
            out.append({"variant": r["variant"], "shape": (r["M"], r["N"], r["K"]), "bytes": b, "ms": ms,
                        "model_ms": t, "error": t / ms - 1.0})
    return out


def fit_tile_read(p: PerfParams, dataset: str | None = None, tol: float = 0.005) -> float:
    """The DRAM rate (TB/s) of a cooperative form's tile reads [model, calibrated on times given bytes]: the rate
    that, as :attr:`PerfParams.tile_read_tb_s` with ``p``'s other constants, puts :func:`tile_read_rows` closest to
    Nsight Compute's durations given each launch's own DRAM bytes — the smallest root-mean-square log ratio over every
    launch (golden-section search over :data:`TILE_READ_RANGE` to ``tol``). nan without the dataset.

    Why not lesson 5's read ceiling (4.7 TB/s, bulk copies of contiguous memory): a GEMM's TMA tile reads a box of
    128 rows of 128 B each, the rows a whole K-row apart, so each k-block's bytes come from many DRAM pages; the
    launches of :data:`h100lab.design.traffic.FORM_DRIFT_DATASET` that read the most ran at 3.4–3.5 TB/s, and the
    fastest ping-pong runs of ``l08/gemm_l2_traffic`` at 4.1."""
    import math

    def score(x: float) -> float:
        rs = tile_read_rows(replace(p, tile_read_tb_s=x), dataset)
        return math.sqrt(sum(math.log1p(r["error"]) ** 2 for r in rs) / len(rs)) if rs else float("nan")

    lo, hi = TILE_READ_RANGE
    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = score(a), score(b)
    if fa != fa:
        return float("nan")
    while hi - lo > tol:
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = score(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = score(b)
    return round((lo + hi) / 2.0, 3)


def _with_tile_reads(p: PerfParams) -> PerfParams:
    """``p`` with the cooperative forms' DRAM bound on the capacity estimate (:attr:`PerfParams.tile_read_tb_s`,
    ``form_drifts``, ``capacity_drift``): each form's drift and the common drift from DRAM counters (no time), the
    tile reads' rate fitted last with ``p``'s other constants (:func:`fit_tile_read`); ``p`` unchanged without
    the counters."""
    from .traffic import FORM_DRIFT_DATASET, calibrated_drift, calibrated_form_drifts

    drifts = calibrated_form_drifts()
    rate = fit_tile_read(p)
    if not drifts or rate != rate:
        return p
    return replace(p, tile_read_tb_s=rate, form_drifts=drifts, capacity_drift=calibrated_drift(), notes=p.notes + (
        f"tile reads: {rate:.2f} TB/s ({FORM_DRIFT_DATASET}, every launch's duration given its DRAM bytes); the "
        "cooperative forms' DRAM bytes with their own drift: " + ", ".join(f"{v} {d:.3f}" for v, d in drifts)
        + f", any other {calibrated_drift():.3f}",))


def _fit_scale_on_cycles(p: PerfParams, shapes: Sequence = FORM_CLOCK_SHAPES, issue: bool = True) -> tuple:
    """(``p`` with ``scale_load_ns`` and ``scale_load_ns_per_rate`` refitted, and with ``issue`` the FP8 group's
    issue window ``fp8_issue_cycles`` too; the residuals): robust least squares of the model's cycles
    (:func:`launch_mcycles`) against Nsight Compute's of the FP8 launches of :data:`FORM_CLOCK_FP8_DATASET` at
    ``shapes`` — cycles, so the clock does not enter (the trace run's untraced times, :data:`SCALE_CALIBRATION`, are
    times at the traces' clocks). The issue window: the k-block trace reads it with the trace's own cost taken out
    (:func:`trace_constants`, an estimate of that cost); the cycles of the untraced launches want more of it — the
    lead-2 forms, whose chain it dominates, came out 3–7 % fast with the trace's figure and the lead-1 forms 5–12 %
    slow, the latency fit splitting the difference [a reading, post hoc: made on held-out records, then tested on a
    registered round, :mod:`h100lab.validation.l08_issue`]. ``p`` unchanged without the dataset."""
    import numpy as np

    from ..validation.fit import FitParam, least_squares

    # the fenced cluster pair's release waits on the loads too, with constants of its own (fitted after these,
    # :func:`_fit_fp8_fence`): its launches are left out
    rows = {k: c for k, c in _form_counters(FORM_CLOCK_FP8_DATASET, shapes).items() if not form(k[0]).cluster_fence}
    if not rows:
        return p, ()

    def params(vals):
        return replace(p, scale_load_ns=vals["load"], scale_load_ns_per_rate=vals["per_rate"],
                       fp8_issue_cycles=vals.get("issue", p.fp8_issue_cycles))

    def res(vals):
        return np.array(_cycle_residuals(rows, params(vals)))

    free = [FitParam("load", 300.0, 1.0, 5000.0), FitParam("per_rate", 0.1, 1e-4, 5.0)]
    if issue:
        free.append(FitParam("issue", p.fp8_issue_cycles or 126.0, 10.0, 1000.0))
    fit = least_squares(res, free)
    return params(fit.values), tuple(fit.residuals)


def _fit_fp8_fence(p: PerfParams, reading: str = FP8_FENCE_READING) -> PerfParams:
    """``p`` with the FP8 pair's release read as ``reading`` (:data:`FENCE_READINGS`) and its constants fitted
    (least squares in log time): ``"overlap"`` F₁ (``cluster_fence_fp8_ns``), ``"after"`` F₂
    (``cluster_fence_fp8_after_ns``), each on the one record of :data:`FP8_FENCE_CALIBRATION`; ``"split"`` both, on
    the two of :data:`FP8_FENCE_SPLIT_CALIBRATION` (:func:`fp8_fence_calibration`). ``p`` unchanged without the
    records' dataset."""
    import numpy as np

    from .. import data
    from ..validation.fit import FitParam, least_squares, log_ratio

    want = fp8_fence_calibration(reading)
    if not all(data.available(d) for d, _, _ in want):
        return p
    rec = [r for d in dict.fromkeys(d for d, _, _ in want) for r in timing_records_of(data.load(d))
           if (d, r["variant"], (r["M"], r["N"], r["K"])) in want]
    free = {"overlap": ["under"], "after": ["after"], "split": ["under", "after"]}[reading]

    def params(vals):
        return replace(p, cluster_fence_fp8_ns=vals.get("under", 0.0), cluster_fence_fp8_after_ns=vals.get("after", 0.0))

    def res(vals):
        q = params(vals)
        return np.array([log_ratio(predict_record(r, q).time_ms, r["median_ms"]) for r in rec])

    fit = least_squares(res, [FitParam(k, 300.0, 1.0 if reading == "split" else 10.0, 5000.0) for k in free])
    q = params(fit.values)
    return replace(q, notes=q.notes + (
        f"FP8 pair's release.cluster fence, read as {reading!r} (max(waited + F1, loads landed) + F2): F1 "
        f"{q.cluster_fence_fp8_ns:.0f} ns, F2 {q.cluster_fence_fp8_after_ns:.0f} ns on "
        + "; ".join(f"{v} at {'x'.join(map(str, sh))} ({d})" for d, v, sh in want) + "; residuals "
        + ", ".join(f"{x:+.3f}" for x in fit.residuals),))


def _fit_form_clock() -> PerfParams:
    """The model's constants, the form clock (:func:`calibrated`): on today's records
    (:func:`todays_records`) of the calibration subset, with the model's wave-clock cap, the form clock from
    Nsight Compute (:func:`form_clock_constants`) and the write weight from its cycles (:func:`smem_write_weight_fit`;
    from ω = 0.5, the time constants refitted at each weight until the weight repeats — a fixed point), every time
    constant refitted at that weight, then the FP8 scale loads' two constants on Nsight Compute's FP8 cycles
    (:func:`_fit_scale_on_cycles`: the launches of every FP8 form but the fenced pair), the pair's fence on its
    records (:func:`_fit_fp8_fence`), then its reuse window (:func:`_with_window`). Every fit runs with the ping-pong
    forms in step, as the one-clock model's own."""
    from .. import data, fitcache

    own = calibrated(form_clock=False)
    extra = tuple(dict.fromkeys(d for d, _, _ in CLUSTER_CALIBRATION))
    trace = data.load(TRACE_DATASET).records if data.available(TRACE_DATASET) else None
    fc = form_clock_constants()
    if not fc:
        raise ValueError(f"the form clock needs {FORM_CLOCK_DATASET} (data/l08)")

    def fit():
        recs = todays_records(load_records(DATASETS + extra))
        kw = dict(trace=trace, wave_clock=own.wave_clock, form_clock=fc)
        om, seen = 0.5, []
        while om not in seen and len(seen) < 6:          # a fixed point of the weight and the refitted constants
            seen.append(om)
            q = calibrate(recs, smem_write_weight=om, **kw)
            om, rms = smem_write_weight_fit(q)
        if om != seen[-1]:                                # a cycle: the weight it returned to, refitted
            q = calibrate(recs, smem_write_weight=om, **kw)
        # the scale loads' constants (on the FP8 launches without the fenced pair), then the pair's fence
        trace_issue = q.fp8_issue_cycles
        q, sres = _fit_scale_on_cycles(replace(q, scale_ws_gate=SCALE_WORKING_SET_MB))
        q = _fit_fp8_fence(q)
        return _with_tile_reads(_with_window(replace(q, notes=q.notes + (
            f"smem_write_weight {om:.2f}: Nsight Compute's cycles at {len(_form_counters())} forms × shapes, rms log "
            f"ratio {rms:.4f}",
            f"FP8 scale loads on Nsight Compute's FP8 cycles ({FORM_CLOCK_FP8_DATASET} at the same shapes), loaded "
            f"by a wave's reads from a working set of {SCALE_WORKING_SET_MB[0]:.0f} MB, fully from "
            f"{SCALE_WORKING_SET_MB[1]:.0f} MB: "
            f"{q.scale_load_ns:.0f} ns + {q.scale_load_ns_per_rate:.3f} ns per B/ns, with the FP8 group's issue "
            f"window {q.fp8_issue_cycles:.0f} cycles (the trace's, its cost taken out: {trace_issue:.0f}); residuals "
            + ", ".join(f"{x:+.3f}" for x in sres)))))

    inputs = _fit_inputs(own.wgmma, own.timing, (FORM_CLOCK_DATASET, FORM_CLOCK_FP8_DATASET, *TODAY_TABLES.values(),
                                                 *_window_inputs(), *_fence_inputs())) \
        + [repr(own.wave_clock), list(SMEM_WRITE_WEIGHTS)]
    return fitcache.memo("l08_perf_params_form_clock", inputs, fit)


def calibrated(smem_shared: bool = False, wave_clock: bool = True, form_clock: bool = True) -> PerfParams:
    """The model's constants (the form clock, :func:`_fit_form_clock`); with ``form_clock=False`` the one-clock
    model's: :func:`calibrate` on the committed datasets that hold calibration records
    (:data:`DATASETS`, the cluster pair's), the k-block trace (:data:`TRACE_DATASET`, when committed) and the
    per-wave clock (:attr:`PerfParams.wave_clock`, its two constants from the traces of
    :data:`WAVE_CLOCK_CALIBRATION`, every other constant fitted with it on: :func:`_fit_model`), then its reuse
    window (:func:`_with_window`), once per process and kept by :mod:`h100lab.fitcache` across processes. Raises
    ValueError when the sustained calibration records are missing. ``wave_clock=False``: the model without the
    per-wave clock (every wave at the fitted clock), fitted on the same subset (what
    :func:`h100lab.validation.l08.wave_clock_diagnosis` compares with). ``smem_shared``: the hypothesis of
    :attr:`PerfParams.smem_shared` (not the model; another explanation of the same partial-wave misses, so fitted
    without the wave clock). ``form_clock`` (default True: the model): every wave at its own activity's clock
    (:func:`_fit_form_clock`; raises ValueError without :data:`FORM_CLOCK_DATASET`); False: the one-clock model it
    replaced (:func:`_fit_model`, :func:`h100lab.validation.l08.form_clock_diagnosis` compares the two); with
    ``smem_shared`` or ``wave_clock=False`` it is off (those hypotheses are tested against the one-clock model). Every
    fit runs in the same state: the ping-pong forms in step while it fits (:attr:`PerfParams.reuse_window` None),
    each model's reuse window of :mod:`h100lab.design.traffic` fitted after its constants, with them."""
    if form_clock and wave_clock and not smem_shared:
        if "params_form" not in _MEMO:
            _MEMO["params_form"] = _fit_form_clock()
        return _MEMO["params_form"]
    if smem_shared:
        if "params_shared" not in _MEMO:
            from .. import data

            extra = tuple(dict.fromkeys(d for d, _, _ in CLUSTER_CALIBRATION))
            trace = data.load(TRACE_DATASET).records if data.available(TRACE_DATASET) else None
            _MEMO["params_shared"] = _with_window(calibrate(load_records(DATASETS + extra), trace=trace,
                                                            smem_shared=True))
        return _MEMO["params_shared"]
    if "params" not in _MEMO:
        q, plain = _fit_model()
        _MEMO["params_plain"] = plain
        _MEMO["params"] = q
    return _MEMO["params"] if wave_clock else _MEMO["params_plain"]
