<?php
// What the PHP files of tests/data share (`require __DIR__ . '/shared.php';`):
// the seed's PHP BloomFilter::JSHash (source: ../shared/seeds/003_a810c6066df339dd.txt),
// copied below verbatim, and seeded pseudo-random byte strings.

 class BloomFilter
{
    /**
     *  下面的哈希函數(shù)隨便用一個(gè)都行,都是把字符串轉(zhuǎn)換成數(shù)字
     */
     /**
     * hash方法類
     * 由Justin Sobel編寫的按位散列函數(shù)
     * update：Denny
     * 返回之前做了內(nèi)存限制在160M,超過10億的哈希后的數(shù)值,把它限制在10億內(nèi),此時(shí)1000W的數(shù)據(jù)可做到1%誤判,內(nèi)存不差這600多M的話就別限制了
     * 因?yàn)閞edis的bitmap申請(qǐng)內(nèi)存是看offset申請(qǐng)內(nèi)存的,setbit mykey 400000000 1，這樣直接申請(qǐng)了600M內(nèi)存
     */
    public static function JSHash($string, $limitMemory=true,$len = null)
    {
        $hash = 1315423911;
        $len || $len = strlen($string);
         for($i = 0; $i < $len; $i++)
        {
            $hash ^= (($hash << 5) + ord($string[$i]) + ($hash >> 2));
        }
         $hashNum = ($hash % 0xFFFFFFFF) & 0xFFFFFFFF;
         //為了節(jié)省內(nèi)存,超過10億就對(duì)半拆,10億,這時(shí)候大約是130M內(nèi)存占用,千萬級(jí)數(shù)據(jù)可以做到1%誤判率,內(nèi)存足夠可以不用判斷,直接生成就行了
        //如果數(shù)據(jù)過4000W的話不用限制了,因?yàn)樯傻臄?shù)據(jù)最大也是2^32次方40多億,此時(shí)內(nèi)存占用大概在600M封頂了
        if($limitMemory){
            if($hashNum>4000000000){
                $hashNum = intval($hashNum/5);
            }elseif($hashNum>3000000000){
                $hashNum = intval($hashNum/4);
            }elseif($hashNum>2000000000){
                $hashNum = intval($hashNum/3);
            }
        }
         return $hashNum;
    }
}

// `$count` strings of `mt_rand($min_len, $max_len)` bytes from mt_rand, in
// order: with mt_srand seeded first, the same strings on every run.
function seeded_byte_strings($count, $min_len, $max_len)
{
    $out = [];
    for ($i = 0; $i < $count; $i++) {
        $len = mt_rand($min_len, $max_len);
        $s = "";
        for ($j = 0; $j < $len; $j++) {
            $s .= chr(mt_rand(0, 255));
        }
        $out[] = $s;
    }
    return $out;
}
