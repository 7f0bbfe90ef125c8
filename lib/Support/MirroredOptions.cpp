//===- MirroredOptions.cpp - A pass's options as a tool's flags ------------===//
#include "snn/Support/MirroredOptions.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>

using namespace llvm;

namespace snn {

class MirroredOptions::Mirror : public cl::Option {
public:
  Mirror(cl::Option *original, cl::OptionCategory &category)
      : cl::Option(original->getNumOccurrencesFlag(), cl::NotHidden), originals{original} {
    setArgStr(original->ArgStr);
    setDescription(original->HelpStr);
    setValueStr(original->ValueStr);
    setValueExpectedFlag(original->getValueExpectedFlag());
    setMiscFlag(static_cast<cl::MiscFlags>(original->getMiscFlags()));
    setFormattingFlag(original->getFormattingFlag());
    addCategory(category);
    addArgument();
  }
  ~Mirror() override { removeArgument(); }

  void forwardTo(cl::Option *original) { originals.push_back(original); }
  bool given() const { return getNumOccurrences() > 0; }

private:
  // Each original parses and stores the value; its error (true) is the mirror's.
  bool handleOccurrence(unsigned pos, StringRef name, StringRef value) override {
    return any_of(originals, [&](cl::Option *original) {
      return original->addOccurrence(pos, name, value);
    });
  }
  enum cl::ValueExpected getValueExpectedFlagDefault() const override {
    return originals.front()->getValueExpectedFlag();
  }
  size_t getOptionWidth() const override { return originals.front()->getOptionWidth(); }
  void printOptionInfo(size_t width) const override {
    originals.front()->printOptionInfo(width);
  }
  void printOptionValue(size_t width, bool force) const override {
    originals.front()->printOptionValue(width, force);
  }
  void setDefault() override {}

  std::vector<cl::Option *> originals;
};

MirroredOptions::MirroredOptions(cl::OptionCategory &category) : category(category) {}
MirroredOptions::~MirroredOptions() = default;

void MirroredOptions::add(const CommandLineOptions &options, ArrayRef<StringRef> skip) {
  // Sorted by name, so --help lists them in a stable order.
  std::map<std::string, cl::Option *> sorted;
  for (const auto &entry : options)
    if (!is_contained(skip, entry.first))
      sorted.emplace(entry.first.str(), entry.second);
  for (const auto &[name, original] : sorted) {
    auto known = find_if(mirrors, [&](const std::unique_ptr<Mirror> &mirror) {
      return mirror->ArgStr == name;
    });
    if (known != mirrors.end())
      (*known)->forwardTo(original);
    else
      mirrors.push_back(std::make_unique<Mirror>(original, category));
  }
}

bool MirroredOptions::anyGiven() const {
  return any_of(mirrors, [](const std::unique_ptr<Mirror> &mirror) { return mirror->given(); });
}

} // namespace snn
