# snn-run command-line behaviour without Python: help, version, and bad input
# giving one `error:` line, exit code 1 and no output file.
# Usage: cmake -DSNN_RUN=path/to/snn-run -DWORK_DIR=scratch -P cli_errors.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(report message)
  message(SEND_ERROR "${message}")
endfunction()

# Runs snn-run ARGN and checks exit code 0 with stdout containing `needle`.
function(expect_success needle)
  execute_process(COMMAND "${SNN_RUN}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${needle}")
    report("snn-run ${ARGN}: want exit 0 and '${needle}', got ${rc}: ${out}${err}")
  endif()
endfunction()

# Runs snn-run ARGN and checks exit code 1, empty stdout, and a stderr of one
# line that starts with "error:" and contains `needle`.
function(expect_error needle)
  execute_process(COMMAND "${SNN_RUN}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "\n$" "" line "${err}")
  if(NOT rc EQUAL 1)
    report("snn-run ${ARGN}: want exit code 1, got '${rc}'")
  endif()
  if(NOT out STREQUAL "")
    report("snn-run ${ARGN}: unexpected stdout '${out}'")
  endif()
  if(NOT line MATCHES "^error: " OR line MATCHES "\n")
    report("snn-run ${ARGN}: want one 'error:' line, got '${err}'")
  endif()
  string(FIND "${line}" "${needle}" found)
  if(found EQUAL -1)
    report("snn-run ${ARGN}: message lacks '${needle}': '${line}'")
  endif()
endfunction()

# Runs snn-run ARGN and checks exit code 1 and that stderr is exactly the one
# line `error: <line>`.
function(expect_error_line line)
  execute_process(COMMAND "${SNN_RUN}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT out STREQUAL "" OR NOT err STREQUAL "error: ${line}\n")
    report("snn-run ${ARGN}: want exit code 1 and 'error: ${line}', got ${rc}: ${out}${err}")
  endif()
endfunction()

set(out "${WORK_DIR}/y.npy")
expect_success("infer" --help)
expect_success("--input" infer --help)
expect_success("snn-run [0-9]" --version)

expect_error("subcommand is required")
expect_error("--output is required" infer "${WORK_DIR}/a" -i x.npy)
expect_error("--bogus" infer "${WORK_DIR}/a" -i x.npy -o "${out}" --bogus)
expect_error("--threads" infer "${WORK_DIR}/a" -i x.npy -o "${out}" --threads 0)
expect_error("artifact directory '${WORK_DIR}/missing' does not exist"
  infer "${WORK_DIR}/missing" -i x.npy -o "${out}")

file(MAKE_DIRECTORY "${WORK_DIR}/empty")
expect_error("has no manifest.json" infer "${WORK_DIR}/empty" -i x.npy -o "${out}")

file(MAKE_DIRECTORY "${WORK_DIR}/badjson")
file(WRITE "${WORK_DIR}/badjson/manifest.json" "{\"format\": ")
expect_error("manifest.json: invalid JSON" infer "${WORK_DIR}/badjson" -i x.npy -o "${out}")

# A FIFO in place of the manifest must not block the run.
file(MAKE_DIRECTORY "${WORK_DIR}/fifo")
execute_process(COMMAND mkfifo "${WORK_DIR}/fifo/manifest.json")
expect_error("fifo/manifest.json: not a regular file" infer "${WORK_DIR}/fifo" -i x.npy -o "${out}")

set(manifest [=[{"format": "spikemesh-artifact", "version": 1, "world_size": 1,
 "programs": [{"file": "program_0.onnx", "ranks": [0]}],
 "input": {"name": "input", "shape": [4, -1, 3], "time_major": true},
 "output": {"name": "output", "shape": [-1, 2], "time_major": false}}]=])
file(MAKE_DIRECTORY "${WORK_DIR}/noprogram")
file(WRITE "${WORK_DIR}/noprogram/manifest.json" "${manifest}")
expect_error("program_0.onnx: cannot open" infer "${WORK_DIR}/noprogram" -i x.npy -o "${out}")

file(MAKE_DIRECTORY "${WORK_DIR}/garbage")
file(WRITE "${WORK_DIR}/garbage/manifest.json" "${manifest}")
file(WRITE "${WORK_DIR}/garbage/program_0.onnx" "this is not a protobuf\n")
expect_error("garbage/program_0.onnx: " infer "${WORK_DIR}/garbage" -i x.npy -o "${out}")

# ... nor in place of the program.
file(MAKE_DIRECTORY "${WORK_DIR}/fifoprogram")
file(WRITE "${WORK_DIR}/fifoprogram/manifest.json" "${manifest}")
execute_process(COMMAND mkfifo "${WORK_DIR}/fifoprogram/program_0.onnx")
expect_error("fifoprogram/program_0.onnx: not a regular file" infer "${WORK_DIR}/fifoprogram" -i x.npy -o "${out}")

string(REPLACE "\"version\": 1" "\"version\": 7" newer "${manifest}")
file(MAKE_DIRECTORY "${WORK_DIR}/newer")
file(WRITE "${WORK_DIR}/newer/manifest.json" "${newer}")
expect_error("artifact format 7, this snn-run reads 1 to 2" infer "${WORK_DIR}/newer" -i x.npy -o "${out}")

# snn-run train / eval: each flag's value is checked as the command line is
# read (before the artifact), with the lines the commands printed when they
# checked the values themselves; names parse with the kinds' tables.
set(missing "${WORK_DIR}/missing")
set(train train "${missing}" --data-npy x.npy,y.npy --steps 2 --batch-size 4 --lr 0.1)
set(eval eval "${missing}" --data-npy x.npy,y.npy)
expect_error_line("--optimizer: unknown optimizer 'rmsprop' (expected sgd, adam or adamw)"
  ${train} --optimizer rmsprop)
expect_error_line("--optimizer: unknown optimizer 'Adam' (expected sgd, adam or adamw)"
  ${train} --optimizer Adam)
expect_error_line("--schedule: unknown schedule 'linear' (expected constant, step or cosine)"
  ${train} --schedule linear)
expect_error_line("--loss: unknown loss 'nll' (expected mse or ce)" ${train} --loss nll)
expect_error_line("--loss: unknown loss 'nll' (expected mse or ce)" ${eval} --loss nll)
expect_error_line("--progress: unknown mode 'fancy' (expected auto, bar, lines or none)"
  ${train} --progress fancy)
expect_error_line("--optimizer: unknown optimizer 'rmsprop' (expected sgd, adam or adamw)"
  --nproc 2 ${train} --optimizer rmsprop)
expect_error_line("--lr must be a finite number >= 0, got nan"
  train "${missing}" --data-npy x.npy,y.npy --steps 2 --batch-size 4 --lr nan)
expect_error_line("--momentum must be a finite number >= 0, got -0.5" ${train} --momentum -0.5)
expect_error_line("--weight-decay must be a finite number >= 0, got inf"
  ${train} --weight-decay inf)
expect_error_line("--gamma must be a finite number >= 0, got -1" ${train} --gamma -1)
expect_error_line("--eta-min must be a finite number >= 0, got nan" ${train} --eta-min nan)
expect_error_line("--epochs and --steps must be positive"
  train "${missing}" --data-npy x.npy,y.npy --epochs -1 --batch-size 4 --lr 0.1)
expect_error_line("--batch-size must be at least 1"
  train "${missing}" --data-npy x.npy,y.npy --steps 2 --batch-size 0 --lr 0.1)
expect_error_line("--batch-size must be at least 1" ${eval} --batch-size 0)
expect_error_line("--step-size must be at least 1" ${train} --step-size -1)
expect_error_line("--checkpoint-every must be at least 1" ${train} --checkpoint-every -1)
expect_error_line("--stop-after must be at least 1" ${train} --stop-after -1)
expect_error_line("--keep-checkpoints must be at least 1" ${train} --keep-checkpoints 0)
expect_error_line("--repeat-time must be at least 1" ${train} --repeat-time -1)
expect_error_line("--repeat-time must be at least 1" ${eval} --repeat-time -2)
expect_error_line("Could not convert: --lr = abc (run 'snn-run --help')"
  train "${missing}" --data-npy x.npy,y.npy --steps 2 --batch-size 4 --lr abc)
# How the values combine is checked by the command.
expect_error_line("--momentum applies to --optimizer sgd only"
  ${train} --optimizer adam --momentum 0.9)
expect_error_line("--schedule step needs --step-size K (K >= 1)" ${train} --schedule step)
expect_error_line("give exactly one of --epochs E and --steps S" ${train} --epochs 1)
expect_error_line("--resume needs --checkpoint DIR" ${train} --resume)
expect_error_line("--checkpoint-sync needs --checkpoint DIR" ${train} --checkpoint-sync)
expect_error_line("--checkpoint-errors needs --checkpoint DIR"
  ${train} --checkpoint-errors continue)
expect_error_line("--checkpoint-errors: unknown policy 'ignore' (expected stop or continue)"
  ${train} --checkpoint-errors ignore)
# Good values pass on to the artifact (0 = not given for the counts).
expect_error_line("artifact directory '${missing}' does not exist"
  ${train} --optimizer adamw --schedule step --step-size 3 --loss ce --progress none
  --weight-decay 0 --gamma 0.5 --eta-min 0 --stop-after 0 --checkpoint-every 0
  --keep-checkpoints 1 --repeat-time 0)
expect_error_line("artifact directory '${missing}' does not exist" ${eval} --loss ce)

if(EXISTS "${out}")
  report("a failed run left ${out} behind")
endif()
