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

string(REPLACE "\"version\": 1" "\"version\": 7" newer "${manifest}")
file(MAKE_DIRECTORY "${WORK_DIR}/newer")
file(WRITE "${WORK_DIR}/newer/manifest.json" "${newer}")
expect_error("artifact format 7, this snn-run reads 1 to 2" infer "${WORK_DIR}/newer" -i x.npy -o "${out}")

if(EXISTS "${out}")
  report("a failed run left ${out} behind")
endif()
